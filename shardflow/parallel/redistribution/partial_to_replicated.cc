// partial -> replicated on some partial axes: AllReduce (sum) along them.
//
// Example, seed 002: MatMul ((2,4),(4,1)) on 8 devices, device matrix (2,4,1), X on axes
// (0,1), W on (1,2). The output (2 x 1 blocks) is partial on axis 1, which refines to (2,4):
// partial on axis 1. AllReduce along it: groups [0,1,2,3] and [4,5,6,7], as seed 002's IR
// shows. Each rank sends 2(n-1)/n of its shard (ring).
#include <algorithm>
#include <iterator>

#include <shardflow/parallel/redistribution/conversion.h>
#include <shardflow/parallel/redistribution/layout_edits.h>

namespace sf {

// Named, not anonymous: every conversion's candidates and lower, compiled in one unit.
namespace partial_to_replicated {
std::vector<RedistributionStep> candidates(const TensorLayout& from, const Shape& shape, int64_t element_bytes) {
  std::vector<RedistributionStep> out;
  const double b = static_cast<double>(shard_bytes(from, shape, element_bytes));
  for (const std::vector<int>& axes : nonempty_subsets(from.partial())) {
    std::vector<int> rest;
    std::set_difference(from.partial().begin(), from.partial().end(), axes.begin(), axes.end(),
                        std::back_inserter(rest));
    const double n = static_cast<double>(from.mesh().size_of(axes));
    out.push_back(make_step(StepKind::kAllReduce, from, with_partial(from, rest), axes, {}, 2 * (n - 1) / n * b));
  }
  return out;
}

Value lower(GraphBuilder& b, const RedistributionStep& step, const Shape&, int rank, Value x) {
  return CollectiveBuilder(b, step_group(step, rank)).all_reduce(x, "sum");
}
}  // namespace partial_to_replicated

extern const Conversion kPartialToReplicated{StepKind::kAllReduce,
                                  partial_to_replicated::candidates, partial_to_replicated::lower};

}  // namespace sf
