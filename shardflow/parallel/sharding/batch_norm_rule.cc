/// @file
/// BatchNorm's sharding rule: x (N, C, ...) normalised per channel with gamma, beta, moving_mean
/// and moving_var (C,). One loop per dim of x; the four channel vectors run over loop 1, so a
/// channel split ((1,4,1,1), (4,), (4,), (4,), (4,)) splits them the same way. The statistics of
/// a channel need only that channel, so a channel split is exact.
///
/// The statistics also run over the batch and the image, and they are not reduced across ranks:
///   - the dims after 1 are whole loops (a strategy that splits H or W gets them gathered);
///   - a split of the batch (the default strategy) normalises each rank's rows with their own
///     statistics, as data parallel and MindSpore's BatchNorm without SyncBatchNorm do, so the
///     network trains as data parallel does rather than exactly as on 1 device
///     (docs/operator_parallel.md).
/// The moving statistics' updates (BatchNormUpdateMoving) follow this op's strategy
/// (graph_sharding.h), so they stay where the parameters are.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest batch_norm_nest(const Node&, const std::vector<Shape>& inputs) {
  LoopNest nest;
  std::vector<int> x;
  for (int d = 0; d < static_cast<int>(inputs[0].size()); ++d) {
    nest.loops.push_back(d == 0 ? "n (batch)" : d == 1 ? "c (channels)" : fmt::format("d{}", d));
    nest.whole.push_back(d >= 2);
    x.push_back(d);
  }
  nest.inputs = {x, {1}, {1}, {1}, {1}};
  nest.output = x;
  return nest;
}
}  // namespace

const ShardingRule kBatchNormRule{batch_norm_nest};

}  // namespace sf
