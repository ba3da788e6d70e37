// A dry run (MindSpore's simulation level): the plan of a training step on N ranks, made
// without starting any — every op's layouts and redistribution plans (shard_graph), the
// local graphs of the first and the last rank built to show the plan holds together, and
// what a step costs each rank (step_estimate.h). For jobs too big to run here: seed 001's
// network on 4096 ranks plans in well under a second.
//
// Threading: a pure function; the result is a plain value.
#pragma once

#include <string>
#include <vector>

#include <shardflow/parallel/sharding/graph_sharding.h>
#include <shardflow/parallel/step_estimate.h>

namespace sf {

struct DryRun {
  int64_t devices = 1;
  GraphSharding sharding;
  StepEstimate per_rank;  // every rank's (they are alike)
  int local_ops = 0;      // nodes of rank 0's local graph (forward)
  double seconds = 0;     // planning time

  // The figures per rank, then each op's sharding.
  std::string str(const Graph& g) const;
};

// Throws as shard_graph does for a strategy that does not fit `devices`.
DryRun dry_run(const Graph& g, const std::vector<int>& outputs, const StrategyTable& table, int64_t devices);

}  // namespace sf
