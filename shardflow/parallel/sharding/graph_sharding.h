/// @file
/// shard_graph: the sharding of a whole (global) graph for semi-auto parallel — every op's
/// strategy (the user's from the StrategyTable, else the default), its layouts, and the
/// redistribution plans between each producer's layout and what each consumer needs. It is the
/// same for every rank, and made before any rank builds or runs anything, so every refusal
/// (a bad strategy, an op without a rule, a strategy for an op the graph lacks) comes first.
///
/// In-place ops (BatchNorm's moving statistics' updates) are sharded with the nodes the outputs
/// need, since a program runs them all. One without a strategy of its own takes the entries of
/// the op that first reads the tensor it updates (BatchNormUpdateMoving those of its BatchNorm),
/// so that it updates the tensor where that op put it; a strategy that would move the tensor (an
/// update of a copy) is refused.
///
/// Sources take the layout their first consumer needs: an Input is cut from the global batch
/// each rank is fed, and a Parameter is generated as that slice, so neither needs
/// communication. A Fill is replicated.
///
/// What an IR dump shows per op (the strategy, device matrix, layouts, inserted steps and their
/// groups) is all here, by global node id.
///
/// Threading: pure functions; the result is a plain value.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/redistribution_plan.h>
#include <shardflow/parallel/sharding/op_sharding.h>

namespace sf {

/// How one node of the global graph is sharded.
struct NodeSharding {
  TensorLayout layout;                      ///< the value's layout as consumers see it
  std::optional<OpSharding> op;             ///< for op nodes (not for sources)
  std::vector<RedistributionPlan> in_plans; ///< per input: producer's layout -> op.inputs[i]
  RedistributionPlan out_plan;              ///< op.output -> op.carried (e.g. the AllReduce of a partial sum)
};

/// The sharding of a whole graph (see the file comment).
struct GraphSharding {
  int64_t devices = 1;  ///< the job's device count
  std::vector<int> nodes;                ///< the nodes the outputs and the in-place ops need, ascending
  std::map<int, NodeSharding> by_node;   ///< by global node id

  /// The sharding of node `id`; InvalidArgument if the outputs do not need it.
  const NodeSharding& at(int id) const;
  /// One line per node: name, op, strategy (marked "default" when not the user's), device
  /// matrix, input and output layouts, and the communication each plan inserts.
  std::string str(const Graph& g) const;
};

/// How an op got its strategy, for printing: "" (the user's), " (default)" or " (follows <op>)".
std::string strategy_origin(const OpSharding& s);

/// Throws (before any communication) for a bad strategy of any op, an op without a sharding
/// rule, or a table entry that names no op of the graph.
GraphSharding shard_graph(const Graph& g, const std::vector<int>& outputs, const StrategyTable& table,
                          int64_t devices);

}  // namespace sf
