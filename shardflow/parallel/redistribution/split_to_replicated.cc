// split along a dim -> replicated: AllGather along the dim's minor axes.
//
// Example: 8x16 on (2,2,2) ("dp","sp","mp") with dim 1 split by (sp, mp), each rank holding
// 8x4. AllGather along mp (groups [0,1] [2,3] [4,5] [6,7]) leaves dim 1 split by sp (8x8
// shards); along (sp, mp) at once (groups [0,1,2,3] [4,5,6,7]) leaves it whole. Only minor
// axes can go: the blocks that gathering a major axis would join are not contiguous. Each
// rank receives (n-1) shards.
//
// The collective concatenates along dim 0, so for another dim its output is cut back into the
// n received pieces (rows) and these are joined along the dim.
#include <shardflow/parallel/redistribution/conversion.h>
#include <shardflow/parallel/redistribution/layout_edits.h>

namespace sf {

// Named, not anonymous: every conversion's candidates and lower, compiled in one unit.
namespace split_to_replicated {
std::vector<RedistributionStep> candidates(const TensorLayout& from, const Shape& shape, int64_t element_bytes) {
  std::vector<RedistributionStep> out;
  const double b = static_cast<double>(shard_bytes(from, shape, element_bytes));
  for (int d = 0; d < from.dims(); ++d)
    for (const std::vector<int>& axes : ascending_tails(from.tensor_map()[d])) {
      const double n = static_cast<double>(from.mesh().size_of(axes));
      out.push_back(make_step(StepKind::kAllGather, from, without_tail(from, d, axes), axes, {d}, (n - 1) * b));
    }
  return out;
}

Value lower(GraphBuilder& b, const RedistributionStep& step, const Shape&, int rank, Value x) {
  const int dim = step.dims.at(0);
  CollectiveBuilder cb(b, step_group(step, rank));
  const Value gathered = cb.all_gather(x);
  if (dim == 0) return gathered;
  return b.concat(split_into(b, gathered, 0, cb.group().size), dim);
}
}  // namespace split_to_replicated

extern const Conversion kSplitToReplicated{StepKind::kAllGather,
                                  split_to_replicated::candidates, split_to_replicated::lower};

}  // namespace sf
