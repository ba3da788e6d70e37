// Auto parallel (MindSpore's AUTO_PARALLEL): the strategies of a global graph's ops found by
// the context's search_mode, given the ones the user set with shard(). The result is a full
// StrategyTable that semi-auto parallel then runs unchanged (train/semi_auto_step.h), so auto
// parallel is a strategy search followed by the semi-auto path.
//
//   "sharding_propagation"  parallel/propagation/sharding_propagation.h
//   "dynamic_programming"   parallel/auto_search.h
//
// Threading: a pure function.
#pragma once

#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/context.h>
#include <shardflow/parallel/propagation/strategy_search.h>

namespace sf {

StrategySearch search_strategies(const Graph& g, const std::vector<int>& outputs, const StrategyTable& given,
                                 int64_t devices, const AutoParallelContext& context);

}  // namespace sf
