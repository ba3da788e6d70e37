#include "comm/all_gather.h"

#include "comm/detail/async.h"
#include "comm/detail/blocks.h"
#include "comm/detail/call.h"
#include "comm/detail/ring.h"

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "AllGather";

Algorithm validate(const Tensor& input, const AllGatherOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  detail::check_input(kOp, input);
  SF_ENFORCE(input.rank() >= 1, InvalidArgument,
             "{} (group '{}'): input {} is a scalar; AllGather concatenates along dim 0", kOp, o.group.name(),
             input.describe());
  return resolve_algorithm(Collective::kAllGather, o.algorithm, static_cast<int64_t>(input.nbytes()), o.group.size());
}

Tensor run(const Tensor& input, const AllGatherOptions& o, Algorithm, uint32_t seq) {
  detail::Call call(detail::Signature::of(kOp, input), o.group, seq, o.timeout);
  const int n = call.size();
  Shape shape = input.shape();
  shape[0] *= n;
  Tensor out(shape, input.dtype());
  const int64_t m = input.numel(), seg = detail::segment_elems(input.dtype());
  if (n == 1 || m == 0) {
    detail::copy_elems(out, 0, input, 0, m);
    return out;
  }
  // Block j of the output is rank j's input: elements [j*m, (j+1)*m).
  const std::vector<detail::Range> blocks = detail::block_ranges(n * m, n);
  for (int64_t k = 0; k < detail::segment_count(n * m, n, seg); ++k) {
    detail::Range mine = detail::segment_of({0, m}, seg, k);
    detail::ring_all_gather_segment(call, detail::pooled_copy(input, mine.begin, mine.size()), out, blocks, seg, k);
  }
  return out;
}

}  // namespace

Tensor all_gather(const Tensor& input, const AllGatherOptions& opts) {
  const Algorithm algo = validate(input, opts);
  return run(input, opts, algo, opts.group.next_sequence());
}

Work all_gather_async(const Tensor& input, const AllGatherOptions& opts) {
  const Algorithm algo = validate(input, opts);
  return detail::submit_collective(input, opts, algo, run);
}

}  // namespace sf::comm
