// Softmax's sharding rule (ops/kernels/softmax.cc), also SoftmaxGrad's (dout and y alike): one
// loop per dim, the softmax axis whole. The leading (batch, head, query) loops split freely;
// each row's max and sum need the entire row, so a split of the axis is gathered before the op
// (an AllGather), and the ranks of that split compute the same rows.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest softmax_nest(const Node& node, const std::vector<Shape>& inputs) {
  const int r = static_cast<int>(inputs[0].size());
  const int64_t a = node.attrs.get_int("axis", -1);  // shape inference checked the range
  const int axis = static_cast<int>(a < 0 ? a + r : a);
  LoopNest nest;
  std::vector<int> dims;
  for (int d = 0; d < r; ++d) {
    nest.loops.push_back(d == axis ? fmt::format("d{} (softmax axis)", d) : fmt::format("d{}", d));
    nest.whole.push_back(d == axis);
    dims.push_back(d);
  }
  nest.inputs.assign(inputs.size(), dims);
  nest.output = dims;
  return nest;
}
}  // namespace

const ShardingRule kSoftmaxRule{softmax_nest};

}  // namespace sf
