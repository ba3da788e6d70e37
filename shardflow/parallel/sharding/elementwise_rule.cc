// The sharding rule of element-wise ops (Add, Sub, Mul, RealDiv, Equal with numpy
// broadcasting; ReLU, ReluGrad, GeLU, GeLUGrad): one loop per output dim. Shapes are right-aligned, so input
// dim d of an input of rank r is output dim d + (R - r); a dim of size 1 where the output's is
// larger is broadcast and may not be split. No loop is reduced: the output is never partial.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest elementwise_nest(const Node& node, const std::vector<Shape>& inputs) {
  const Shape& out = node.shape;
  const int r = static_cast<int>(out.size());
  LoopNest nest;
  for (int d = 0; d < r; ++d) {
    nest.loops.push_back(fmt::format("d{}", d));
    nest.output.push_back(d);
  }
  nest.whole.assign(r, false);
  for (const Shape& in : inputs) {
    const int lead = r - static_cast<int>(in.size());
    std::vector<int> dims;
    for (int d = 0; d < static_cast<int>(in.size()); ++d)
      dims.push_back(in[d] == 1 && out[d + lead] != 1 ? LoopNest::kBroadcast : d + lead);
    nest.inputs.push_back(std::move(dims));
  }
  return nest;
}
}  // namespace

const ShardingRule kElementwiseRule{elementwise_nest};

}  // namespace sf
