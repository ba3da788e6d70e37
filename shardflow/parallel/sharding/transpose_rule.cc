// Transpose's sharding rule: one loop per dim of x, and output dim i is loop perm[i], so a split
// follows its dim through the permutation: x (B, S, H, D) split ((2,1,4,1)) by perm (0,2,1,3)
// gives an output (B, H, S, D) split (2,4,1,1). Every block moves within its rank, so nothing is
// communicated, nothing is partial and no loop is whole.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest transpose_nest(const Node& node, const std::vector<Shape>& inputs) {
  const std::vector<int64_t> perm = node.attrs.get_ints("perm");  // shape inference checked it
  LoopNest nest;
  std::vector<int> x;
  for (int d = 0; d < static_cast<int>(inputs[0].size()); ++d) {
    nest.loops.push_back(fmt::format("d{}", d));
    x.push_back(d);
  }
  nest.inputs = {x};
  for (int64_t p : perm) nest.output.push_back(static_cast<int>(p));
  nest.whole.assign(x.size(), false);
  return nest;
}
}  // namespace

const ShardingRule kTransposeRule{transpose_nest};

}  // namespace sf
