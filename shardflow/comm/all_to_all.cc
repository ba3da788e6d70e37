#include <shardflow/comm/all_to_all.h>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/by_reference.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/detail/native.h>
#include <shardflow/core/brief.h>

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "AlltoAll";

struct Plan {
  Algorithm algo;
  int split_dim, concat_dim;  // normalised to [0, rank)
};

Plan validate(const Tensor& input, const AllToAllOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  detail::check_input(kOp, input);
  const std::string g = o.group.name();
  const int rank = input.rank();
  SF_ENFORCE(rank >= 1, InvalidArgument, "{} (group '{}'): input {} is a scalar", kOp, g, input.describe());
  SF_ENFORCE(o.split_count == o.group.size(), InvalidArgument,
             "{} (group '{}'): split_count {} must equal the group size {}", kOp, g, o.split_count, o.group.size());
  for (auto [name, d] : {std::pair{"split_dim", o.split_dim}, std::pair{"concat_dim", o.concat_dim}})
    SF_ENFORCE(d >= -rank && d < rank, InvalidArgument, "{} (group '{}'): {} {} is out of range for input {}", kOp, g,
               name, d, input.describe());
  Plan p{Algorithm::kPairwise, o.split_dim < 0 ? o.split_dim + rank : o.split_dim,
         o.concat_dim < 0 ? o.concat_dim + rank : o.concat_dim};
  SF_ENFORCE(input.dim(p.split_dim) % o.split_count == 0, InvalidArgument,
             "{} (group '{}'): dim {} (split_dim) of input {} is not divisible by split_count {}", kOp, g, p.split_dim,
             input.describe(), o.split_count);
  p.algo = resolve_algorithm(Collective::kAllToAll, o.algorithm, static_cast<int64_t>(input.nbytes()), o.group.size(),
                             transport_caps(o.group.transport(), Collective::kAllToAll, input.numel()));
  return p;
}

int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// Block j of the input along split_dim, packed contiguously into a pooled buffer.
Tensor pack(const Tensor& in, int sd, int n, int j) {
  const Shape& s = in.shape();
  const int64_t outer = prod(s, 0, sd), inner = prod(s, sd + 1, s.size()), mid = s[sd] / n;
  Tensor buf = BufferPool::global().acquire(in.dtype(), outer * mid * inner);
  for (int64_t o = 0; o < outer; ++o)
    detail::copy_elems(buf, o * mid * inner, in, (o * s[sd] + j * mid) * inner, mid * inner);
  return buf;
}

// Places the block from rank j (shape `blk`) at position j along concat_dim of `out`.
void unpack(Tensor& out, const Tensor& buf, const Shape& blk, int cd, int n, int j) {
  const int64_t outer = prod(blk, 0, cd), len = prod(blk, cd, blk.size());
  for (int64_t o = 0; o < outer; ++o) detail::copy_elems(out, (o * n + j) * len, buf, o * len, len);
}

detail::Signature signature(const Tensor& input, const AllToAllOptions& o) {
  return detail::Signature::of(kOp, input)
      .with("split_count", o.split_count)
      .with("split_dim", o.split_dim)
      .with("concat_dim", o.concat_dim);
}

// The shape of one block (the input split n ways along split_dim) and of the output.
Shape block_shape(const Tensor& input, const Plan& p, int n) {
  Shape blk = input.shape();
  blk[p.split_dim] /= n;
  return blk;
}
Tensor make_output(const Tensor& input, const Plan& p, int n) {
  Shape shape = block_shape(input, p, n);
  shape[p.concat_dim] *= n;
  return Tensor::empty(shape, input.dtype());
}

// Block j of `in` along split_dim as a contiguous tensor: a view when split_dim is 0, else
// packed into a pooled buffer (one reference, for the caller to release).
Tensor block_of(const Tensor& in, const Plan& p, int n, int j) {
  if (p.split_dim != 0) return pack(in, p.split_dim, n, j);
  const int64_t rows = in.dim(0) / n;
  return in.rows(j * rows, (j + 1) * rows);
}

// kByReference: each rank copies its block out of every peer's input, where it lies; the
// closing handshake keeps each input alive until everyone has read its blocks.
void by_reference(detail::Call& call, const Tensor& input, const Plan& p, Tensor& out) {
  const int n = call.size(), r = call.rank();
  const Shape blk = block_shape(input, p, n);
  detail::send_to_all(call, input, 0);
  std::vector<Tensor> ins = detail::recv_from_all(call, input, 0);
  const int64_t blk_numel = sf::numel(blk);
  for (int q = 0; q < n; ++q) {
    Tensor b = block_of(ins[q], p, n, r);
    if (p.concat_dim == 0)  // the block is one contiguous range of the output
      detail::copy_to_output(out, q * blk_numel, b, 0, blk_numel, out.nbytes());
    else
      unpack(out, b, blk, p.concat_dim, n, q);
    if (p.split_dim != 0) BufferPool::global().release(b);
  }
  detail::stream_fence();
  ins.clear();
  const std::vector<int> peers = detail::others(call);
  detail::signal_done(call, peers, 1);
  detail::wait_done(call, peers, 1);
}

Tensor run(const Tensor& input, const AllToAllOptions& o, const Plan& p, uint32_t seq) {
  detail::Call call(signature(input, o), o.group, seq, o.timeout);
  const int n = call.size(), r = call.rank();
  const Shape blk = block_shape(input, p, n);
  Tensor out = make_output(input, p, n);
  if (out.numel() == 0) return out;
  if (p.algo == Algorithm::kByReference && n > 1) {
    by_reference(call, input, p, out);
    return out;
  }
  BufferPool& pool = BufferPool::global();
  // Step 0: this rank's own block stays here.
  Tensor own = pack(input, p.split_dim, n, r);
  unpack(out, own, blk, p.concat_dim, n, r);
  pool.release(own);
  const int64_t blk_numel = sf::numel(blk);
  // Step s: send block r+s to rank r+s, receive rank r-s's block for this rank.
  for (int s = 1; s < n; ++s) {
    const int to = (r + s) % n, from = (r - s + n) % n;
    call.send(to, pack(input, p.split_dim, n, to));
    Tensor got = call.recv(from);
    SF_ENFORCE(got.numel() == blk_numel && got.dtype() == input.dtype(), ShapeError,
               "{}: received {} from rank {} where a block {} of {} was expected", call.where(), got.describe(), from,
               brief_shape(blk), dtype_name(input.dtype()));
    unpack(out, got, blk, p.concat_dim, n, from);
    pool.release(got);
  }
  return out;
}

// The native form on flat buffers: blocks in rank order. Along dim 0 they are the tensors
// themselves; along another dim the input is packed into, and the output unpacked from, a
// pooled buffer.
struct NativePlan {
  NativeRequest req;
  Tensor out;       // the result
  Tensor recv_buf;  // pooled, to unpack from (concat_dim != 0), else undefined
};

NativePlan native_plan(const Tensor& input, const Plan& p, int n) {
  NativePlan np;
  np.out = make_output(input, p, n);
  Tensor send = input;
  if (p.split_dim != 0) {
    send = BufferPool::global().acquire(input.dtype(), input.numel());
    const int64_t blk_numel = input.numel() / n;
    for (int j = 0; j < n; ++j) {
      Tensor b = pack(input, p.split_dim, n, j);
      detail::copy_elems(send, j * blk_numel, b, 0, blk_numel);
      BufferPool::global().release(b);
    }
  }
  Tensor recv = np.out;
  if (p.concat_dim != 0) recv = np.recv_buf = BufferPool::global().acquire(input.dtype(), np.out.numel());
  np.req = {.collective = Collective::kAllToAll, .input = send, .output = recv};
  return np;
}

// Unpacks the received blocks and gives the pooled buffers back.
Tensor native_finish(const NativePlan& np, const Tensor& input, const Plan& p, int n, const Tensor& send_buf) {
  if (np.recv_buf.defined()) {
    const Shape blk = block_shape(input, p, n);
    const int64_t blk_numel = sf::numel(blk);
    Tensor out = np.out;
    for (int i = 0; i < n; ++i) unpack(out, np.recv_buf.rows(i * blk_numel, (i + 1) * blk_numel), blk, p.concat_dim, n, i);
    BufferPool::global().release(np.recv_buf);
  }
  BufferPool::global().release(send_buf);  // a no-op unless it was packed
  return np.out;
}

bool trivial(const Tensor& input, const AllToAllOptions& o) { return o.group.size() == 1 || input.numel() == 0; }

}  // namespace

Tensor all_to_all(const Tensor& input, const AllToAllOptions& opts) {
  const Plan plan = validate(input, opts);
  const uint32_t seq = opts.group.next_sequence();
  if (plan.algo != Algorithm::kNative || trivial(input, opts)) return run(input, opts, plan, seq);
  const int n = opts.group.size();
  NativePlan np = native_plan(input, plan, n);
  Tensor send_buf = np.req.input;
  NativeRequest req = np.req;
  np.req = NativeRequest();
  return detail::run_native(signature(input, opts), opts.group, seq, opts.timeout, std::move(req), [] {},
                            [&] { return native_finish(np, input, plan, n, send_buf); });
}

Work all_to_all_async(const Tensor& input, const AllToAllOptions& opts) {
  const Plan plan = validate(input, opts);
  if (plan.algo != Algorithm::kNative || trivial(input, opts)) return detail::submit_collective(input, opts, plan, run);
  const int n = opts.group.size();
  NativePlan np = native_plan(input, plan, n);
  Tensor send_buf = np.req.input;
  NativeRequest req = np.req;
  np.req = NativeRequest();
  return detail::submit_native(signature(input, opts), opts.group, opts.timeout, std::move(req), [] {},
                               [np, input, plan, n, send_buf] { return native_finish(np, input, plan, n, send_buf); });
}

}  // namespace sf::comm
