// BiasAdd's sharding rule: x (N, C, ...) plus bias (C,) along dim 1. One loop per dim of x;
// the bias's only dim is loop 1, so a split of the channels splits the bias the same way
// (strategy ((2,4),(4,))), and a split of the batch leaves the bias replicated.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest bias_add_nest(const Node&, const std::vector<Shape>& inputs) {
  LoopNest nest;
  std::vector<int> x;
  for (int d = 0; d < static_cast<int>(inputs[0].size()); ++d) {
    nest.loops.push_back(d == 1 ? "channels" : fmt::format("d{}", d));
    x.push_back(d);
  }
  nest.inputs = {x, {1}};
  nest.output = x;
  nest.whole.assign(x.size(), false);
  return nest;
}
}  // namespace

const ShardingRule kBiasAddRule{bias_add_nest};

}  // namespace sf
