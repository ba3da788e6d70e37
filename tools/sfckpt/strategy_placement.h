/// @file
/// Where `sfckpt convert --strategy-file F --devices N` puts each tensor of a checkpoint: the
/// layout F's strategies give it on N devices, or whole where F does not say.
///
/// A strategy file is keyed by op ("matmul1/MatMul"), and nothing in an op's name says which
/// parameter it reads ("fc1_weight" feeds matmul1 in seed 001). What ties them is the graph: a
/// semi-auto job cuts a parameter to the layout of input i of the first op that reads it
/// (parallel/sharding/graph_sharding.h). sfckpt has no graph, so the file names that tie in
/// an optional top-level section the strategy loader ignores:
///
/// @verbatim
///   {"version": 1,
///    "strategies": {"matmul1/MatMul": {"in_strategy": [[2, 4], [4, 1]]}, ...},
///    "parameters": {"fc1_weight": {"op": "matmul1/MatMul", "input": 1}, ...}}
/// @endverbatim
///
/// A parameter named there takes in_strategy[input] of its op: a layout entry as written, a
/// tuple as parallel/strategy.h's strategy_to_layout (blocks in dim order), each with a repeat
/// axis appended where it uses fewer than N devices. Either way a rank's box is the one the job
/// cuts, so a rank of the job reads exactly its shard's bytes. An optimizer state tensor
/// "<kind>.<parameter>" of its parameter's shape takes its parameter's layout. Every other
/// tensor (global_step, rank_local.*, a parameter the section leaves out or whose op has no
/// strategy in the file) stays whole, with the reason.
///
/// Threading: pure functions of the files they read.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <shardflow/parallel/tensor_layout.h>
#include <shardflow/train/checkpoint/manifest.h>

namespace sf::sfckpt {

/// The placement of a checkpoint's tensors on N devices (see the file comment).
struct StrategyPlacement {
  std::map<std::string, TensorLayout> layouts;  ///< tensors placed, by name: layouts on N devices
  std::vector<std::string> whole;               ///< "<name> (<why it stays whole>)", in manifest order
};

/// Places the tensors of `m` on `devices` devices by strategy file `path`. Throws UsageError, one
/// line naming the file and the rule, for a file that does not load (docs/strategy_file.md) or
/// does not fit the checkpoint: a "parameters" section that is not {name: {"op": str, "input":
/// uint}}, a tensor the checkpoint lacks, an input the op's in_strategy lacks, an entry with
/// another number of dims than its tensor, a strategy whose device count neither equals nor
/// divides `devices`, a split that does not divide its dim.
StrategyPlacement place_by_strategy_file(const std::string& path, const ckpt::Manifest& m, int devices);

}  // namespace sf::sfckpt
