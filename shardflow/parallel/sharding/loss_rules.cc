// The losses' sharding rules. Both are means: a rank's loss over its block of the batch,
// scaled by 1/blocks, is its share of the mean, and the shares are summed (AllReduce) into
// the loss every rank reports.
//
// SoftmaxCrossEntropy(logits (N, C), labels (N,)): loops batch and class. A split class loop is
// Megatron-LM's vocab-parallel cross-entropy rather than a gather of the logits: each rank
// reduces its own block of columns (ops/kernels/sharded_cross_entropy.cc) to a row max, then,
// after an AllReduce(max) over the class group, to the row's sum of exp(x - max) and its
// label's logit, which an AllReduce(sum) over the class group completes; each rank then has
// every row's loss of its batch block. The class loop is therefore `local`: the lowering
// reduces it itself, so the output is not partial over it (the ranks of a class group hold the
// same loss), while the batch loop stays a mean, partial and scaled. The offset of the rank's
// block and the global `classes` go to the local ops, so a vocabulary padded to divide the
// degree keeps its padding out of the max, the sum and the gradient. Autodiff of each rank's
// local graph gives the exact gradient: AllReduce(sum)'s gradient is AllReduce(sum) of dout,
// and the max gets none (the loss does not depend on it).
// MSELoss(pred, target): one loop per dim, every one reduced.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

#include <shardflow/ops/collective_builder.h>

namespace sf {

namespace {
LoopNest softmax_cross_entropy_nest(const Node&, const std::vector<Shape>&) {
  LoopNest nest;
  nest.loops = {"batch", "classes"};
  nest.inputs = {{0, 1}, {0}};
  nest.whole = {false, false};
  nest.local = {false, true};
  nest.mean = true;
  return nest;
}

// Unsplit classes: the plain op on the rank's rows. Split: the three local ops around an
// AllReduce(max) and an AllReduce(sum) on the class group (see the file comment).
Value softmax_cross_entropy_lower(GraphBuilder& b, const LowerContext& ctx) {
  const Node& n = ctx.node;
  const DimSlice& cols = ctx.in_slices[0][1];
  const int64_t global = ctx.in_shapes[0][1];
  if (cols.extent == global) return b.op(n.op, ctx.in, n.attrs, n.name);
  const Attrs block{{"offset", cols.offset}, {"classes", n.attrs.get_int("classes", global)}};
  CollectiveBuilder c(b, ctx.group_along(0, 1));
  b.push_scope(n.name);
  const Value m = c.all_reduce(b.op("CrossEntropyShardMax", {ctx.in[0]}, block), "max");
  const Value sums = c.all_reduce(b.op("CrossEntropyShardSums", {ctx.in[0], ctx.in[1], m}, block), "sum");
  b.pop_scope();
  return b.op("CrossEntropyFromSums", {sums, m}, {}, n.name);
}

LoopNest mse_loss_nest(const Node&, const std::vector<Shape>& inputs) {
  LoopNest nest;
  std::vector<int> dims;
  for (int d = 0; d < static_cast<int>(inputs[0].size()); ++d) {
    nest.loops.push_back(fmt::format("d{}", d));
    dims.push_back(d);
  }
  nest.inputs = {dims, dims};
  nest.whole.assign(dims.size(), false);
  nest.mean = true;
  return nest;
}
}  // namespace

const ShardingRule kSoftmaxCrossEntropyRule{softmax_cross_entropy_nest, softmax_cross_entropy_lower};
const ShardingRule kMseLossRule{mse_loss_nest};

}  // namespace sf
