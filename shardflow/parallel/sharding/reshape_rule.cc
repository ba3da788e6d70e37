// Reshape and Flatten's sharding rule. Reshaping a split tensor is local only where every
// rank's block stays a block of the result: when dim 0 is kept (Flatten always keeps it) and
// only dim 0 is split. So dim 0 is a loop shared by input and output, and every other dim is
// a whole loop of its own: a strategy that splits them gets them gathered by redistribution
// before the op (MindSpore's Reshape redistributes the same way). The local Reshape gets this
// rank's block shape as its `shape` attribute.
#include <shardflow/parallel/sharding/sharding_rule.h>

namespace sf {

namespace {
LoopNest reshape_nest(const Node& node, const std::vector<Shape>& inputs) {
  const Shape& in = inputs[0];
  const Shape& out = node.shape;
  const bool keeps_dim0 = !in.empty() && !out.empty() && in[0] == out[0];
  LoopNest nest;
  std::vector<int> x;
  for (size_t d = 0; d < in.size(); ++d) {
    x.push_back(static_cast<int>(nest.loops.size()));
    nest.loops.push_back("in d" + std::to_string(d));
    nest.whole.push_back(!(d == 0 && keeps_dim0));
  }
  nest.inputs = {x};
  for (size_t d = 0; d < out.size(); ++d) {
    if (d == 0 && keeps_dim0) {
      nest.output.push_back(0);
      continue;
    }
    nest.output.push_back(static_cast<int>(nest.loops.size()));
    nest.loops.push_back("out d" + std::to_string(d));
    nest.whole.push_back(true);
  }
  return nest;
}

Value reshape_lower(GraphBuilder& b, const LowerContext& ctx) {
  if (ctx.node.op == "Flatten") return b.op("Flatten", ctx.in, ctx.node.attrs, ctx.node.name);
  Attrs attrs = ctx.node.attrs;
  attrs.set("shape", ctx.local_out);
  return b.op("Reshape", ctx.in, std::move(attrs), ctx.node.name);
}
}  // namespace

const ShardingRule kReshapeRule{reshape_nest, reshape_lower};

}  // namespace sf
