// replicated -> split: each rank keeps its own block (StridedSlice), no communication.
//
// Example: 8x16 replicated on (2,2,2) ("dp","sp","mp") -> dim 1 split by (sp, dp): rank
// dp*4 + sp*2 + mp keeps columns [4k, 4k+4) with k = sp*2 + dp (rank 4 keeps columns 4..7).
// The planner offers one axis at a time, appended to the minor end of a dim (a rank can only
// cut inside the block it holds), and merges consecutive slices into one step; lower() cuts
// every dim at once from the step's before and after layouts.
#include <shardflow/parallel/redistribution/conversion.h>
#include <shardflow/parallel/redistribution/layout_edits.h>

namespace sf {

// Named, not anonymous: every conversion's candidates and lower, compiled in one unit.
namespace replicated_to_split {
std::vector<RedistributionStep> candidates(const TensorLayout& from, const Shape& shape, int64_t) {
  std::vector<RedistributionStep> out;
  for (int axis : from.replicated_axes())
    for (int d = 0; d < from.dims(); ++d) {
      TensorLayout after = with_tail(from, d, {axis});
      if (divides(after, shape)) out.push_back(make_step(StepKind::kSlice, from, std::move(after), {axis}, {d}, 0));
    }
  return out;
}

Value lower(GraphBuilder& b, const RedistributionStep& step, const Shape& shape, int rank, Value x) {
  const Shape local = b.shape(x);
  std::vector<int64_t> begin(local.size(), 0), end = local;
  for (int d = 0; d < step.after.dims(); ++d) {
    const std::vector<int>& was = step.before.tensor_map()[d];
    const std::vector<int>& now = step.after.tensor_map()[d];
    const std::vector<int> added(now.begin() + static_cast<std::ptrdiff_t>(was.size()), now.end());
    const int64_t extent = shape[d] / step.after.splits(d);
    begin[d] = step.after.mesh().index_on(rank, added) * extent;
    end[d] = begin[d] + extent;
  }
  return b.strided_slice(x, begin, end);
}
}  // namespace replicated_to_split

extern const Conversion kReplicatedToSplit{StepKind::kSlice,
                                  replicated_to_split::candidates, replicated_to_split::lower};

}  // namespace sf
