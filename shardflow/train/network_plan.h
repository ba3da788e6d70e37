// The plan of a network's training step on N ranks, made without starting any (MindSpore's
// simulation level, the examples' --dry-run N): the network and loss built on global shapes
// as every rank builds them (train/semi_auto_step.h), in auto parallel mode the strategy
// search from the shard() calls, then parallel/dry_run.h's plan and per-rank figures. Nothing
// communicates, so N may be far more ranks than this host could start.
//
// Threading: a pure function of its arguments; `net` is only read (its strategies) and built.
#pragma once

#include <string>
#include <vector>

#include <shardflow/parallel/dry_run.h>
#include <shardflow/parallel/propagation/strategy_search.h>
#include <shardflow/train/cell.h>
#include <shardflow/train/value_and_grad.h>

namespace sf {

struct NetworkPlan {
  Graph global;           // network and loss on global shapes
  int loss = -1;          // its loss node
  StrategySearch search;  // auto parallel: the strategies found and why (empty otherwise)
  DryRun dry_run;

  // The search's explanation (auto parallel, when asked), then the per-rank figures and each
  // op's strategy.
  std::string str(bool explain) const;
};

// `loss` builds the scalar loss from the batch's columns (global `shapes` and `dtypes`, as the
// dataset yields them on 1 device). The parallel mode and search mode are the context's. Throws
// as shard_graph does for a strategy that does not fit `devices`.
NetworkPlan plan_network(nn::Cell& net, const LossBuilder& loss, const std::vector<Shape>& shapes,
                         const std::vector<DType>& dtypes, int64_t devices);

}  // namespace sf
