#include <shardflow/comm/reduce_scatter.h>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/by_reference.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/detail/native.h>
#include <shardflow/comm/detail/ring.h>

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "ReduceScatter";

Algorithm validate(const Tensor& input, const ReduceScatterOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  detail::check_input(kOp, input);
  SF_ENFORCE(is_valid(o.op), InvalidArgument, "{} (group '{}'): reduce op {} is not sum, prod, max or min", kOp,
             o.group.name(), static_cast<int>(o.op));
  SF_ENFORCE(input.rank() >= 1, InvalidArgument, "{} (group '{}'): input {} is a scalar; it is split along dim 0", kOp,
             o.group.name(), input.describe());
  SF_ENFORCE(input.dim(0) % o.group.size() == 0, InvalidArgument,
             "{} (group '{}'): dim 0 of input {} is not divisible by the group size {}", kOp, o.group.name(),
             input.describe(), o.group.size());
  return resolve_algorithm(Collective::kReduceScatter, o.algorithm, static_cast<int64_t>(input.nbytes()),
                           o.group.size(), transport_caps(o.group.transport(), Collective::kReduceScatter, input.numel()));
}

detail::Signature signature(const Tensor& input, const ReduceScatterOptions& o) {
  return detail::Signature::of(kOp, input).with("op", static_cast<int>(o.op));
}

Tensor make_output(const Tensor& input, int n) {
  Shape shape = input.shape();
  shape[0] /= n;
  return Tensor::empty(shape, input.dtype());
}

// kByReference: rank r reduces block r of every rank's input, where it lies, into its output;
// the closing handshake keeps each input alive until everyone has read its block.
void by_reference(detail::Call& call, ReduceOp op, const Tensor& input, Tensor& out) {
  detail::send_to_all(call, input, 0);
  std::vector<Tensor> ins = detail::recv_from_all(call, input, 0);
  std::vector<const Tensor*> src;
  for (const Tensor& t : ins) src.push_back(&t);
  const int64_t m = out.numel();
  detail::reduce_in_order(op, input.dtype(), out.raw(), src, call.rank() * m, (call.rank() + 1) * m);
  src.clear();
  ins.clear();
  const std::vector<int> peers = detail::others(call);
  detail::signal_done(call, peers, 1);
  detail::wait_done(call, peers, 1);
}

Tensor run(const Tensor& input, const ReduceScatterOptions& o, Algorithm algo, uint32_t seq) {
  detail::Call call(signature(input, o), o.group, seq, o.timeout);
  const int n = call.size(), r = call.rank();
  Tensor out = make_output(input, n);
  const int64_t m = out.numel(), seg = call.segment_elems(input.dtype());
  if (n == 1 || m == 0) {
    detail::copy_elems(out, 0, input, 0, m);
    return out;
  }
  if (algo == Algorithm::kByReference) {
    by_reference(call, o.op, input, out);
    return out;
  }
  const std::vector<detail::Range> blocks = detail::block_ranges(n * m, n);
  detail::ring_reduce_scatter(call, o.op, input, blocks, seg, [&](int64_t k, Tensor t) {
    detail::copy_elems(out, detail::segment_of(blocks[r], seg, k).begin - blocks[r].begin, t, 0, t.numel());
    BufferPool::global().release(t);
  });
  return out;
}

bool trivial(const Tensor& input, const ReduceScatterOptions& o) { return o.group.size() == 1 || input.numel() == 0; }

NativeRequest native_request(const Tensor& input, const ReduceScatterOptions& o) {
  return {.collective = Collective::kReduceScatter, .op = o.op, .input = input,
          .output = make_output(input, o.group.size())};
}

}  // namespace

Tensor reduce_scatter(const Tensor& input, const ReduceScatterOptions& opts) {
  const Algorithm algo = validate(input, opts);
  const uint32_t seq = opts.group.next_sequence();
  if (algo != Algorithm::kNative || trivial(input, opts)) return run(input, opts, algo, seq);
  return detail::run_native(signature(input, opts), opts.group, seq, opts.timeout, native_request(input, opts));
}

Work reduce_scatter_async(const Tensor& input, const ReduceScatterOptions& opts) {
  const Algorithm algo = validate(input, opts);
  if (algo != Algorithm::kNative || trivial(input, opts)) return detail::submit_collective(input, opts, algo, run);
  return detail::submit_native(signature(input, opts), opts.group, opts.timeout, native_request(input, opts));
}

}  // namespace sf::comm
