/// @file
/// BatchNormUpdateMoving's sharding rule: moving (C,) updated in place from the statistics of
/// x (N, C, ...), plus any control inputs. The loops are BatchNorm's (one per dim of x, channels
/// on loop 1) in BatchNorm's order, so that the strategy of the BatchNorm it belongs to, which
/// it follows (graph_sharding.h), gives it BatchNorm's device matrix and layouts: the moving
/// statistics are updated where the parameter lives, and x is read in the layout BatchNorm
/// already has it in.
///   - a channel split updates each rank's block of channels from those channels, exactly;
///   - the batch loop is `local`: split, each rank updates its copy from its own rows (as data
///     parallel does, and as BatchNorm normalised them), so nothing is partial and the copies of
///     a "replicated" moving statistic may differ between the ranks of a batch split;
///   - the dims after 1 are whole, as in BatchNorm.
/// A control input only orders the update; each of its dims is a whole loop of its own.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest batch_norm_update_nest(const Node&, const std::vector<Shape>& inputs) {
  LoopNest nest;
  std::vector<int> x;
  for (int d = 0; d < static_cast<int>(inputs[1].size()); ++d) {
    nest.loops.push_back(d == 0 ? "n (batch, per rank)" : d == 1 ? "c (channels)" : fmt::format("d{}", d));
    nest.whole.push_back(d >= 2);
    nest.local.push_back(d == 0);
    x.push_back(d);
  }
  nest.inputs = {{1}, x};
  for (size_t i = 2; i < inputs.size(); ++i) {
    std::vector<int> control;
    for (size_t d = 0; d < inputs[i].size(); ++d) {
      control.push_back(static_cast<int>(nest.loops.size()));
      nest.loops.push_back(fmt::format("control {} d{}", i - 2, d));
      nest.whole.push_back(true);
      nest.local.push_back(false);
    }
    nest.inputs.push_back(std::move(control));
  }
  nest.output = {1};
  return nest;
}
}  // namespace

const ShardingRule kBatchNormUpdateMovingRule{batch_norm_update_nest};

}  // namespace sf
