// The cost-model search for graphs with few or no annotations (MindSpore's
// search_mode="dynamic_programming"): every op not sharded by the user takes one of its
// candidate strategies (parallel/propagation/candidates.h), the combination chosen for the
// least cost per rank per step — communication plus, under a memory limit, memory:
//
//   an op's own cost   its partial sums resolved (forward and backward), and the gradient
//                      AllReduce of each parameter block it reads over that block's replicas
//   an edge's cost     the redistribution between producer and consumer, forward and backward
//   memory             parameter blocks and local results, weighted by a factor that grows
//                      until the plan fits the limit (a Lagrangian relaxation)
// which is step_estimate.h's model, so the estimate reported is that of the plan chosen.
//
// How: dynamic programming over the tree in which each op hangs from the producer of its
// first input — exact for chains and trees, the shape of MLP-sized networks — then each op in
// turn moves to its cheapest candidate given all its neighbours (the edges the tree left out),
// until none moves. The work is (ops) x (candidates)^2 plans, cached.
//
// Threading: a pure function.
#pragma once

#include <string>
#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/propagation/strategy_search.h>

namespace sf {

struct AutoSearchOptions {
  double memory_limit_bytes = 0;  // per rank; 0: none
  std::string dataset_strategy = "data_parallel";
};

// Throws InvalidArgument if no combination fits the memory limit, naming the least memory
// found; refuses given strategies as shard_op does.
StrategySearch search_auto(const Graph& g, const std::vector<int>& outputs, const StrategyTable& given,
                           int64_t devices, const AutoSearchOptions& options = {});

}  // namespace sf
