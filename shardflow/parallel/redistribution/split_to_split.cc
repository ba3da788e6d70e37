// split along dim i -> split along dim j by the same axes: AlltoAll along them.
//
// Example: 8x16 on (2,2,2) ("dp","sp","mp") with dim 0 split by mp (4x16 shards) -> dim 1
// split by mp (8x8 shards): AlltoAll along mp (groups [0,1] [2,3] [4,5] [6,7]) with
// split_dim 1 and concat_dim 0. Group rank g sends piece k of its dim 1 to rank k and stacks
// what it receives along dim 0 in rank order, so it ends with all of dim 0 and block g of
// dim 1. The axes taken off dim i are its minor ones (as for AllGather) and go to the minor end
// of dim j. Each rank sends (n-1)/n of its shard.
#include <shardflow/parallel/redistribution/conversion.h>
#include <shardflow/parallel/redistribution/layout_edits.h>

namespace sf {

// Named, not anonymous: every conversion's candidates and lower, compiled in one unit.
namespace split_to_split {
std::vector<RedistributionStep> candidates(const TensorLayout& from, const Shape& shape, int64_t element_bytes) {
  std::vector<RedistributionStep> out;
  const double b = static_cast<double>(shard_bytes(from, shape, element_bytes));
  for (int i = 0; i < from.dims(); ++i)
    for (const std::vector<int>& axes : ascending_tails(from.tensor_map()[i])) {
      const double n = static_cast<double>(from.mesh().size_of(axes));
      const TensorLayout gathered = without_tail(from, i, axes);
      for (int j = 0; j < from.dims(); ++j) {
        if (j == i) continue;
        TensorLayout after = with_tail(gathered, j, axes);
        if (divides(after, shape))
          out.push_back(make_step(StepKind::kAlltoAll, from, std::move(after), axes, {i, j}, (n - 1) / n * b));
      }
    }
  return out;
}

Value lower(GraphBuilder& b, const RedistributionStep& step, const Shape&, int rank, Value x) {
  CollectiveBuilder cb(b, step_group(step, rank));
  return cb.all_to_all(x, cb.group().size, /*split_dim=*/step.dims.at(1), /*concat_dim=*/step.dims.at(0));
}
}  // namespace split_to_split

extern const Conversion kSplitToSplit{StepKind::kAlltoAll,
                                  split_to_split::candidates, split_to_split::lower};

}  // namespace sf
