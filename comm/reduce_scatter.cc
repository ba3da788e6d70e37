#include "comm/reduce_scatter.h"

#include "comm/buffer_pool.h"
#include "comm/detail/async.h"
#include "comm/detail/blocks.h"
#include "comm/detail/call.h"
#include "comm/detail/ring.h"

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
                           o.group.size());
}

Tensor run(const Tensor& input, const ReduceScatterOptions& o, Algorithm, uint32_t seq) {
  detail::Call call(detail::Signature::of(kOp, input).with("op", static_cast<int>(o.op)), o.group, seq, o.timeout);
  const int n = call.size(), r = call.rank();
  Shape shape = input.shape();
  shape[0] /= n;
  Tensor out(shape, input.dtype());
  const int64_t m = out.numel(), seg = detail::segment_elems(input.dtype());
  if (n == 1 || m == 0) {
    detail::copy_elems(out, 0, input, 0, m);
    return out;
  }
  const std::vector<detail::Range> blocks = detail::block_ranges(n * m, n);
  for (int64_t k = 0; k < detail::segment_count(n * m, n, seg); ++k) {
    Tensor mine = detail::ring_reduce_scatter_segment(call, o.op, input, blocks, seg, k);
    detail::copy_elems(out, detail::segment_of(blocks[r], seg, k).begin - blocks[r].begin, mine, 0, mine.numel());
    BufferPool::global().release(mine);
  }
  return out;
}

}  // namespace

Tensor reduce_scatter(const Tensor& input, const ReduceScatterOptions& opts) {
  const Algorithm algo = validate(input, opts);
  return run(input, opts, algo, opts.group.next_sequence());
}

Work reduce_scatter_async(const Tensor& input, const ReduceScatterOptions& opts) {
  const Algorithm algo = validate(input, opts);
  return detail::submit_collective(input, opts, algo, run);
}

}  // namespace sf::comm
