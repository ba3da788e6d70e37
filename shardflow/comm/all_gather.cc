#include <shardflow/comm/all_gather.h>

#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/by_reference.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/detail/native.h>
#include <shardflow/comm/detail/ring.h>

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "AllGather";

Algorithm validate(const Tensor& input, const AllGatherOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  detail::check_input(kOp, input);
  SF_ENFORCE(input.rank() >= 1, InvalidArgument,
             "{} (group '{}'): input {} is a scalar; AllGather concatenates along dim 0", kOp, o.group.name(),
             input.describe());
  return resolve_algorithm(Collective::kAllGather, o.algorithm, static_cast<int64_t>(input.nbytes()), o.group.size(),
                           transport_caps(o.group.transport(), Collective::kAllGather, input.numel() * o.group.size()));
}

detail::Signature signature(const Tensor& input) { return detail::Signature::of(kOp, input); }

Tensor make_output(const Tensor& input, int n) {
  Shape shape = input.shape();
  shape[0] *= n;
  return Tensor::empty(shape, input.dtype());
}

// kByReference: each rank copies every peer's input, where it lies, into its own output;
// the closing handshake keeps each input alive until everyone has copied it.
void by_reference(detail::Call& call, const Tensor& input, Tensor& out) {
  const int64_t m = input.numel();
  detail::send_to_all(call, input, 0);
  std::vector<Tensor> ins = detail::recv_from_all(call, input, 0);
  for (int q = 0; q < call.size(); ++q) detail::copy_to_output(out, q * m, ins[q], 0, m, out.nbytes());
  detail::stream_fence();
  ins.clear();
  const std::vector<int> peers = detail::others(call);
  detail::signal_done(call, peers, 1);
  detail::wait_done(call, peers, 1);
}

Tensor run(const Tensor& input, const AllGatherOptions& o, Algorithm algo, uint32_t seq) {
  detail::Call call(signature(input), o.group, seq, o.timeout);
  const int n = call.size(), r = call.rank();
  Tensor out = make_output(input, n);
  const int64_t m = input.numel(), seg = call.segment_elems(input.dtype());
  if (n == 1 || m == 0) {
    detail::copy_elems(out, 0, input, 0, m);
    return out;
  }
  if (algo == Algorithm::kByReference) {
    by_reference(call, input, out);
    return out;
  }
  // Block j of the output is rank j's input: elements [j*m, (j+1)*m).
  const std::vector<detail::Range> blocks = detail::block_ranges(n * m, n);
  detail::copy_elems(out, blocks[r].begin, input, 0, m);
  for (int64_t k = 0; k < detail::segment_count(blocks, seg); ++k) {
    const detail::Range mine = detail::segment_of({0, m}, seg, k);
    call.send((r + 1) % n, detail::pooled_copy(input, mine.begin, mine.size()), detail::kAllGatherSlot);
  }
  detail::ring_all_gather(call, out, blocks, seg);
  return out;
}

bool trivial(const Tensor& input, const AllGatherOptions& o) { return o.group.size() == 1 || input.numel() == 0; }

NativeRequest native_request(const Tensor& input, const AllGatherOptions& o) {
  return {.collective = Collective::kAllGather, .input = input, .output = make_output(input, o.group.size())};
}

}  // namespace

Tensor all_gather(const Tensor& input, const AllGatherOptions& opts) {
  const Algorithm algo = validate(input, opts);
  const uint32_t seq = opts.group.next_sequence();
  if (algo != Algorithm::kNative || trivial(input, opts)) return run(input, opts, algo, seq);
  return detail::run_native(signature(input), opts.group, seq, opts.timeout, native_request(input, opts));
}

Work all_gather_async(const Tensor& input, const AllGatherOptions& opts) {
  const Algorithm algo = validate(input, opts);
  if (algo != Algorithm::kNative || trivial(input, opts)) return detail::submit_collective(input, opts, algo, run);
  return detail::submit_native(signature(input), opts.group, opts.timeout, native_request(input, opts));
}

}  // namespace sf::comm
