// replicated -> partial on some replicated axes: along them the first rank keeps its value and
// the others hold zeros, so the sum over them is the value. No communication.
//
// Example: 8x16 replicated on (2,2,2) ("dp","sp","mp") -> partial on dp: ranks 0..3 (dp = 0)
// keep the tensor, ranks 4..7 hold zeros. The gradient is the dual: it flows back only from
// the ranks that kept the value. Offered one axis at a time; consecutive ones are merged.
#include <shardflow/parallel/redistribution/conversion.h>
#include <shardflow/parallel/redistribution/layout_edits.h>

namespace sf {

// Named, not anonymous: every conversion's candidates and lower, compiled in one unit.
namespace replicated_to_partial {
std::vector<RedistributionStep> candidates(const TensorLayout& from, const Shape&, int64_t) {
  std::vector<RedistributionStep> out;
  for (int axis : from.replicated_axes()) {
    std::vector<int> partial = from.partial();
    partial.push_back(axis);
    out.push_back(make_step(StepKind::kPartial, from, with_partial(from, std::move(partial)), {axis}, {}, 0));
  }
  return out;
}

// Every rank multiplies by its 1 or 0, rather than the others dropping x for a zero Fill:
// then every rank's graph has the same shape and its backward the same collectives, in the
// same order, which the ranks of a group must run together.
Value lower(GraphBuilder& b, const RedistributionStep& step, const Shape&, int rank, Value x) {
  const bool keep = step.before.mesh().index_on(rank, step.axes) == 0;
  return b.mul(x, b.fill({}, keep ? 1.0f : 0.0f));
}
}  // namespace replicated_to_partial

extern const Conversion kReplicatedToPartial{StepKind::kPartial,
                                  replicated_to_partial::candidates, replicated_to_partial::lower};

}  // namespace sf
