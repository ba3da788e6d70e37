/// @file
/// Strategy files: a network's op strategies as JSON keyed by op node name, so its sharding can
/// change without recompiling (MindSpore's strategy checkpoint, strategy_ckpt_save_file /
/// strategy_ckpt_load_file). Tuple and layout forms both; a layout entry carries its device
/// matrix, axis names and per-dim axes ("None", a name, or a list of names, first major):
///
/// @verbatim
///   {"version": 1,
///    "strategies": {
///      "matmul1/MatMul": {"in_strategy": [
///          {"device_matrix": [2, 2, 2], "alias_name": ["dp", "sp", "mp"], "tensor_map": ["mp", ["sp", "dp"]]},
///          {"device_matrix": [2, 2, 2], "alias_name": ["dp", "sp", "mp"], "tensor_map": [["sp", "dp"], "None"]}]},
///      "relu1/ReLU": {"in_strategy": [[4, 1]]},
///      "matmul2/MatMul": {"in_strategy": [[2, 4], [4, 1]], "out_strategy": [[8, 1]]}}}
/// @endverbatim
///
/// docs/strategy_file.md has the grammar. Loading checks every entry and refuses a bad one with
/// InvalidArgument naming the file, the op and the rule; check_strategy_file then checks the
/// table against the network's global graph (every op named exists, every strategy fits its op)
/// with the same naming — all before any rank communicates.
///
/// Threading: pure functions; the files are written atomically (core/text_file.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/sharding/graph_sharding.h>
#include <shardflow/parallel/sharding/op_strategy.h>

namespace sf {

///@{
/// Limits, checked before the file is read or its JSON built: its size and how deep it nests.
inline constexpr size_t kMaxStrategyFileBytes = size_t{16} << 20;
inline constexpr int kMaxStrategyFileDepth = 16;
///@}

/// Throws IoError for a missing, unreadable or too large file, InvalidArgument for bad JSON
/// (or nested too deep) or a bad entry.
StrategyTable load_strategy_file(const std::string& path);
/// Throws InvalidArgument for a layout entry without axis names, IoError if it cannot write.
void save_strategy_file(const std::string& path, const StrategyTable& table);
/// The JSON text save_strategy_file writes.
std::string strategy_json(const StrategyTable& table);

/// Every op's strategy in a sharded graph, defaults included, keyed by node name: what a job
/// ran with, to save and edit.
StrategyTable strategies_of(const Graph& global, const GraphSharding& sharding);

/// Shards `global` (its `outputs`) with `table` on `devices` devices, as training will; a
/// refusal is rethrown as InvalidArgument prefixed with "strategy file '<path>': ".
void check_strategy_file(const std::string& path, const StrategyTable& table, const Graph& global,
                         const std::vector<int>& outputs, int64_t devices);

}  // namespace sf
