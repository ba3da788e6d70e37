// Dropout's sharding rule (ops/kernels/dropout.cc): one loop per dim of x, shared with the
// output; the seeds' one dim is the loop of x's batch_axis, so a rank holds the seeds of the
// samples whose blocks it holds. Any dim splits freely and nothing is communicated: the mask
// of an element follows its sample's seed and its global position alone, so the lowering only
// tells the local op where its block sits in the whole tensor (offsets, global_shape) and
// every rank draws the block of the 1-device mask. It also makes the salt explicit, so that
// the mask never depends on the name the local node gets.
#include <shardflow/core/rng.h>
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
int batch_axis_of(const Node& node, int rank) {
  const int64_t b = node.attrs.get_int("batch_axis", 0);  // shape inference checked the range
  return static_cast<int>(b < 0 ? b + rank : b);
}

LoopNest dropout_nest(const Node& node, const std::vector<Shape>& inputs) {
  const int r = static_cast<int>(inputs[0].size());
  const int b = batch_axis_of(node, r);
  LoopNest nest;
  std::vector<int> dims;
  for (int d = 0; d < r; ++d) {
    nest.loops.push_back(d == b ? fmt::format("d{} (batch)", d) : fmt::format("d{}", d));
    dims.push_back(d);
  }
  nest.whole.assign(r, false);
  nest.inputs = {dims, {b}};
  nest.output = dims;
  return nest;
}

Value dropout_lower(GraphBuilder& b, const LowerContext& ctx) {
  const Node& n = ctx.node;
  const std::vector<DimSlice>& block = ctx.in_slices[0];
  // The global node may itself be a block of a larger tensor: this rank's starts further on.
  std::vector<int64_t> offsets = n.attrs.get_ints("offsets", std::vector<int64_t>(block.size(), 0));
  for (size_t d = 0; d < block.size(); ++d) offsets[d] += block[d].offset;
  Attrs attrs = n.attrs;
  attrs.set("offsets", offsets);
  // x's global shape is the node's: Dropout's output is shaped as x.
  attrs.set("global_shape", n.attrs.get_ints("global_shape", n.shape));
  if (!attrs.has("salt")) attrs.set("salt", static_cast<int64_t>(stream_of(n.name)));
  return b.op("Dropout", ctx.in, std::move(attrs), n.name);
}
}  // namespace

const ShardingRule kDropoutRule{dropout_nest, dropout_lower};

}  // namespace sf
