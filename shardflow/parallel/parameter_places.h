/// @file
/// Which op input each parameter of a sharded graph is cut for: semi-auto parallel gives a
/// parameter the layout of input i of the first op (in node order) that reads it
/// (parallel/sharding/graph_sharding.h), so a parameter's layout follows from the strategy of
/// that op. A strategy file is keyed by op; this is the tie from parameter names to it, written
/// as the strategy file's optional "parameters" section, which `sfckpt convert --strategy-file`
/// reads to lay a checkpoint out for the file's strategies (docs/checkpoint_format.md) and
/// load_strategy_file ignores:
///
/// @verbatim
///   "parameters": {"w": {"op": "matmul/MatMul", "input": 1}, "w2": {"op": "matmul2/MatMul", "input": 1}}
/// @endverbatim
///
/// Threading: pure functions.
#pragma once

#include <map>
#include <string>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/sharding/graph_sharding.h>
#include <shardflow/parallel/sharding/op_strategy.h>

namespace sf {

/// The op input a parameter is cut for.
struct ParameterPlace {
  std::string op;  ///< the op's node name, "matmul/MatMul"
  int input = 0;   ///< which of its inputs the parameter is
};

/// Parameter places by parameter name.
using ParameterPlaces = std::map<std::string, ParameterPlace>;

/// Every Parameter node the sharding needs that an op reads, by its name: the first op in node
/// order reading it and the input index (what shard_graph cuts it to).
ParameterPlaces parameter_places(const Graph& global, const GraphSharding& sharding);

/// strategy_json(table) with a "parameters" section holding `places`, one parameter per line.
std::string strategy_json_with_parameters(const StrategyTable& table, const ParameterPlaces& places);

/// Writes what a sharded graph ran with to `path`: every op's strategy (strategies_of) and the
/// "parameters" section (parameter_places), so that the file both reproduces the job and lays a
/// checkpoint out for it. Throws as save_strategy_file.
void save_strategy_file(const std::string& path, const Graph& global, const GraphSharding& sharding);

}  // namespace sf
