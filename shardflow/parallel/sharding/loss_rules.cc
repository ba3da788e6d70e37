// The losses' sharding rules. Both are means: a rank's loss over its block of the batch,
// scaled by 1/blocks, is its share of the mean, and the shares are summed (AllReduce) into
// the loss every rank reports.
//
// SoftmaxCrossEntropy(logits (N, C), labels (N,)): loops batch and class. Each row's
// log-sum-exp needs every class, so the class loop is whole: a strategy that splits it, e.g.
// ((2,4),(2,)), gets the logits' class blocks gathered (AllGather) before the op, and the
// four ranks of each class group compute the same rows. (Reducing the max and sum across the
// class shards instead would save that gather; see docs/operator_parallel.md.)
// MSELoss(pred, target): one loop per dim, every one reduced.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest softmax_cross_entropy_nest(const Node&, const std::vector<Shape>&) {
  LoopNest nest;
  nest.loops = {"batch", "classes"};
  nest.inputs = {{0, 1}, {0}};
  nest.whole = {false, true};
  nest.mean = true;
  return nest;
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

const ShardingRule kSoftmaxCrossEntropyRule{softmax_cross_entropy_nest};
const ShardingRule kMseLossRule{mse_loss_nest};

}  // namespace sf
