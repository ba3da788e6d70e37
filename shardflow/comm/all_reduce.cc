#include <shardflow/comm/all_reduce.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/by_reference.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/detail/native.h>
#include <shardflow/comm/detail/ring.h>

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "AllReduce";
// kByReference writes its reduced block to the other outputs in chunks of this many elements,
// each still in L1 from the reduction.
constexpr int64_t kByReferenceChunkElems = 4096;
using detail::Call;

Algorithm validate(const Tensor& input, const AllReduceOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  detail::check_input(kOp, input);
  SF_ENFORCE(is_valid(o.op), InvalidArgument, "{} (group '{}'): reduce op {} is not sum, prod, max or min", kOp,
             o.group.name(), static_cast<int>(o.op));
  return resolve_algorithm(Collective::kAllReduce, o.algorithm, static_cast<int64_t>(input.nbytes()), o.group.size(),
                           transport_caps(o.group.transport(), Collective::kAllReduce, input.numel()));
}

Tensor ring(Call& call, const Tensor& in, ReduceOp op) {
  const int n = call.size(), r = call.rank();
  const int64_t seg = call.segment_elems(in.dtype());
  const std::vector<detail::Range> blocks = detail::block_ranges(in.numel(), n);
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  // Each segment of block r, once reduced, goes into the output and straight on around the
  // ring: the all-gather of segment k overlaps the reduce-scatter of the later ones.
  detail::ring_reduce_scatter(call, op, in, blocks, seg, [&](int64_t k, Tensor t) {
    detail::copy_elems(out, detail::segment_of(blocks[r], seg, k).begin, t, 0, t.numel());
    call.send((r + 1) % n, t, detail::kAllGatherSlot);
  });
  detail::ring_all_gather(call, out, blocks, seg);
  return out;
}

// Combines `acc` with a partner's copy in canonical order (lower group rank first), so both
// partners compute the same bits.
void combine(ReduceOp op, Tensor& acc, const Tensor& got, bool got_is_lower) {
  if (got_is_lower)
    reduce(op, acc.dtype(), acc.raw(), got.raw(), acc.raw(), acc.numel());
  else
    reduce(op, acc.dtype(), acc.raw(), acc.raw(), got.raw(), acc.numel());
}

Tensor exchange(Call& call, int peer, const Tensor& acc, uint8_t slot) {
  call.send(peer, detail::pooled_copy(acc, 0, acc.numel()), slot);
  Tensor got = call.recv(peer, slot);
  SF_ENFORCE(got.numel() == acc.numel() && got.dtype() == acc.dtype(), ShapeError,
             "{}: received {} from rank {} where {} elements of {} were expected", call.where(), got.describe(), peer,
             acc.numel(), dtype_name(acc.dtype()));
  return got;
}

Tensor recursive_doubling(Call& call, const Tensor& in, ReduceOp op) {
  const int n = call.size(), r = call.rank();
  const int p = std::bit_floor(static_cast<unsigned>(n)), rem = n - p;
  BufferPool& pool = BufferPool::global();
  Tensor acc = in.clone();  // the output; never sent itself, only copies of it
  // Round 0 (fold, only when n is not a power of two): among the first 2*rem ranks, each even
  // rank hands its tensor to the odd rank above it and sits out; p ranks remain, renumbered
  // v = r/2 below 2*rem and v = r - rem above.
  if (r < 2 * rem && r % 2 == 0) {
    call.send(r + 1, detail::pooled_copy(acc, 0, acc.numel()), 0);
    // Last round (unfold): the odd partner sends the final result back.
    Tensor got = call.recv(r + 1, 0xfe);
    detail::copy_elems(acc, 0, got, 0, acc.numel());
    pool.release(got);
    return acc;
  }
  if (r < 2 * rem) {
    Tensor got = call.recv(r - 1, 0);
    combine(op, acc, got, true);
    pool.release(got);
  }
  const int v = r < 2 * rem ? r / 2 : r - rem;
  auto real = [&](int vr) { return vr < rem ? 2 * vr + 1 : vr + rem; };
  // Rounds 1..log2(p): exchange with the virtual partner at distance 2^i; after round i all
  // 2^(i+1) ranks of an aligned block hold the same bits.
  uint8_t slot = 1;
  for (int mask = 1; mask < p; mask <<= 1, ++slot) {
    const int pv = v ^ mask;
    Tensor got = exchange(call, real(pv), acc, slot);
    combine(op, acc, got, pv < v);
    pool.release(got);
  }
  if (r < 2 * rem) call.send(r - 1, detail::pooled_copy(acc, 0, acc.numel()), 0xfe);
  return acc;
}

detail::Signature signature(const Tensor& input, const AllReduceOptions& o) {
  return detail::Signature::of(kOp, input).with("op", static_cast<int>(o.op));
}

// kByReference: rank r reduces block r of every rank's input in place (peers' inputs read
// where they lie) and writes the result straight into block r of every rank's output, chunk
// by chunk while it is in cache. Then the closing handshake: when a rank has heard "done"
// from every peer, its output is complete and nobody reads its input any more.
Tensor by_reference(Call& call, const Tensor& in, ReduceOp op) {
  const int n = call.size(), r = call.rank();
  const int64_t w = static_cast<int64_t>(dtype_size(in.dtype()));
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  detail::send_to_all(call, in, 0);
  detail::send_to_all(call, out, 1);
  std::vector<Tensor> ins = detail::recv_from_all(call, in, 0);
  std::vector<Tensor> outs = detail::recv_from_all(call, out, 1);
  std::vector<const Tensor*> src;
  for (const Tensor& t : ins) src.push_back(&t);
  const std::vector<int> peers = detail::others(call);
  const detail::Range mine = detail::block_range(in.numel(), n, r);
  // Large outputs are fresh memory that will not stay in cache: reduce each chunk into an L1
  // scratch and stream it to every output, which saves reading each output line first.
  const bool stream = in.nbytes() >= detail::kStreamBytes;
  alignas(64) std::byte scratch[kByReferenceChunkElems * sizeof(float)];
  std::byte* own = static_cast<std::byte*>(out.raw());
  for (int64_t b = mine.begin; b < mine.end; b += kByReferenceChunkElems) {
    const int64_t len = std::min(kByReferenceChunkElems, mine.end - b);
    if (stream) {
      detail::reduce_in_order(op, in.dtype(), scratch, src, b, b + len);
      for (Tensor& o : outs) detail::stream_copy(static_cast<std::byte*>(o.raw()) + b * w, scratch, len * w);
    } else {
      detail::reduce_in_order(op, in.dtype(), own + b * w, src, b, b + len);
      for (int q : peers) std::memcpy(static_cast<std::byte*>(outs[q].raw()) + b * w, own + b * w, len * w);
    }
  }
  if (stream) detail::stream_fence();
  src.clear();
  ins.clear();
  outs.clear();
  detail::signal_done(call, peers, 2);
  detail::wait_done(call, peers, 2);
  return out;
}

Tensor run(const Tensor& input, const AllReduceOptions& o, Algorithm algo, uint32_t seq) {
  Call call(signature(input, o), o.group, seq, o.timeout);
  if (call.size() == 1 || input.numel() == 0) return input.clone();
  switch (algo) {
    case Algorithm::kRing: return ring(call, input, o.op);
    case Algorithm::kByReference: return by_reference(call, input, o.op);
    default: return recursive_doubling(call, input, o.op);
  }
}

NativeRequest native_request(const Tensor& input, const AllReduceOptions& o) {
  return {.collective = Collective::kAllReduce, .op = o.op, .input = input, .output = Tensor::empty(input.shape(), input.dtype())};
}

// A group of one, or nothing to reduce: no backend call (run() answers it locally).
bool trivial(const Tensor& input, const AllReduceOptions& o) { return o.group.size() == 1 || input.numel() == 0; }

}  // namespace

Tensor all_reduce(const Tensor& input, const AllReduceOptions& opts) {
  const Algorithm algo = validate(input, opts);
  const uint32_t seq = opts.group.next_sequence();
  if (algo != Algorithm::kNative || trivial(input, opts)) return run(input, opts, algo, seq);
  return detail::run_native(signature(input, opts), opts.group, seq, opts.timeout, native_request(input, opts));
}

Work all_reduce_async(const Tensor& input, const AllReduceOptions& opts) {
  const Algorithm algo = validate(input, opts);
  if (algo != Algorithm::kNative || trivial(input, opts)) return detail::submit_collective(input, opts, algo, run);
  return detail::submit_native(signature(input, opts), opts.group, opts.timeout, native_request(input, opts));
}

}  // namespace sf::comm
