// Sharding propagation (MindSpore's search_mode="sharding_propagation", seed 002): the ops
// the user sharded keep their strategies, and every other op gets one from its neighbours.
//
// How: starting from the given ops, the undecided op whose cheapest candidate costs least is
// decided next (a priority queue, so cheap edges are settled before dear ones), taking the
// candidate (candidates.h) that moves the fewest bytes per rank on its edges to the ops
// already decided — forward to consumers and backward to producers alike; ties go to the
// earliest candidate. When every reachable op is decided, each propagated op is looked at
// again with all its neighbours known and moves to a strictly cheaper candidate if there is
// one, until none does (a fixed point: every move lowers the total edge bytes). Ops that no
// given op reaches through the graph's edges get the default, data parallel strategy.
//
// Only the redistribution on edges is priced, not an op's own resolution of a partial sum:
// that is what makes seed 002's matmul2 take ((2,4),(4,1)) from relu as MindSpore's does,
// though its AllReduce then costs more than an AllGather of relu's output would. The cost
// model of auto_search.h prices both.
//
// A given strategy invalid in itself is refused as in semi-auto parallel (shard_op's
// messages); one that merely disagrees with a neighbour's is resolved by the redistribution
// shard_graph inserts between them.
//
// Threading: a pure function.
#pragma once

#include <string_view>
#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/propagation/strategy_search.h>

namespace sf {

StrategySearch propagate_strategies(const Graph& g, const std::vector<int>& outputs, const StrategyTable& given,
                                    int64_t devices, std::string_view dataset_strategy = "data_parallel");

}  // namespace sf
