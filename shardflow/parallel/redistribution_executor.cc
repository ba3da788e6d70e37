#include <shardflow/parallel/redistribution_executor.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/redistribution/conversion.h>
#include <shardflow/parallel/redistribution/layout_edits.h>

namespace sf {

Value apply_redistribution(GraphBuilder& b, const RedistributionPlan& plan, int rank, Value x) {
  const Shape local = plan.from.local_shape(plan.shape);
  SF_ENFORCE(b.shape(x) == local, ShapeError,
             "redistribution on rank {}: the input has shape {} but its shard in {} of {} has shape {}", rank,
             brief_shape(b.shape(x)), plan.from.spec(), brief_shape(plan.shape), brief_shape(local));
  for (const RedistributionStep& step : plan.steps) x = conversion(step.kind).lower(b, step, plan.shape, rank, x);
  return x;
}

std::vector<std::pair<std::string, std::vector<int>>> redistribution_groups(const RedistributionPlan& plan, int rank) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (std::vector<int>& g : plan.groups_of(rank)) out.emplace_back(group_name(g), std::move(g));
  return out;
}

}  // namespace sf
