// partial on some axes -> split along a dim by them: ReduceScatter (sum) along those axes.
//
// Example, seed 001: matmul1's output on (2,2,2) ("dp","sp","mp") is split on dim 0 by mp
// and partial on sp and dp; its out_strategy layout(("mp","sp","dp"), "None") wants dim 0 split
// by (mp, sp, dp). One collective appends its axes in device-matrix order (a group lists its
// ranks ascending, so group rank g must get block g), and (sp, dp) is not that order: the plan
// is a ReduceScatter along sp (groups [0,2] [1,3] [4,6] [5,7]) then one along dp ([0,4] [1,5]
// [2,6] [3,7]). Each rank sends (n-1)/n of its shard, so the two cost what one over both would.
//
// The collective scatters dim 0, so for another dim the shard is first cut into n pieces along
// it and the pieces stacked along dim 0: group rank g then receives the sum of pieces g.
#include <shardflow/parallel/redistribution/conversion.h>
#include <shardflow/parallel/redistribution/layout_edits.h>

namespace sf {

// Named, not anonymous: every conversion's candidates and lower, compiled in one unit.
namespace partial_to_split {
std::vector<RedistributionStep> candidates(const TensorLayout& from, const Shape& shape, int64_t element_bytes) {
  std::vector<RedistributionStep> out;
  const double b = static_cast<double>(shard_bytes(from, shape, element_bytes));
  for (const std::vector<int>& axes : nonempty_subsets(from.partial())) {
    const double n = static_cast<double>(from.mesh().size_of(axes));
    for (int d = 0; d < from.dims(); ++d) {
      TensorLayout after = with_tail(from, d, axes);
      if (divides(after, shape))
        out.push_back(make_step(StepKind::kReduceScatter, from, std::move(after), axes, {d}, (n - 1) / n * b));
    }
  }
  return out;
}

Value lower(GraphBuilder& b, const RedistributionStep& step, const Shape&, int rank, Value x) {
  const int dim = step.dims.at(0);
  CollectiveBuilder cb(b, step_group(step, rank));
  if (dim != 0) x = b.concat(split_into(b, x, dim, cb.group().size), 0);
  return cb.reduce_scatter(x, "sum");
}
}  // namespace partial_to_split

extern const Conversion kPartialToSplit{StepKind::kReduceScatter,
                                  partial_to_split::candidates, partial_to_split::lower};

}  // namespace sf
