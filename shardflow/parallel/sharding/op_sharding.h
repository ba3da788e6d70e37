/// @file
/// shard_op: one op's strategy turned into the layouts of its inputs and output, through the
/// op's sharding rule (sharding_rule.h), with every check made before any communication.
///
/// A tuple strategy gives each loop of the op its number of blocks; the op's device matrix is
/// those counts in loop order (MatMul ((2,4),(4,1)) -> (2,4,1)), with MindSpore's repeat axis
/// appended when it uses fewer devices than the job ((4,1) on 8 -> (4,1,2)). A layout strategy
/// brings its own device matrix and gives each loop its axes. Refused, each with a message
/// naming the op and the rule: an op without a rule; a number of entries other than the op's
/// inputs; an entry with another number of dims than its tensor; tuples and layouts mixed in
/// one op; layouts on different device matrices; a device matrix whose product neither equals
/// nor divides the job's devices; inputs that split one loop differently (MatMul's reduce
/// dim); a split of a broadcast dim; one axis used by two loops; a split that does not divide
/// its dim. (An unknown axis name, or an axis used twice in one tensor, is refused by the
/// Layout call itself, parallel/layout.h.)
///
/// Threading: pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/sharding/op_strategy.h>

namespace sf {

/// One op's strategy turned into the layouts of its inputs and output.
struct OpSharding {
  OpStrategy strategy;               ///< as the user gave it, or the default
  bool given = false;                ///< true if the user gave it
  /// An in-place op without a strategy of its own: the op whose strategy it took (graph_sharding.h).
  std::string follows;
  DeviceMatrix mesh;                 ///< the op's device matrix on the job's devices
  std::vector<TensorLayout> inputs;  ///< the layout each input must be in
  TensorLayout output;               ///< the local op's result: partial over split reduced loops
  /// Where the result is carried next: out_strategy's layout, else `output` with its partial
  /// axes summed (AllReduce).
  TensorLayout carried;
  float scale = 1.0f;                ///< factor on the local result: 1/blocks for a mean over split loops
};

/// `inputs` are the global shapes of node's inputs, `devices` the job's device count.
OpSharding shard_op(const Node& node, const std::vector<Shape>& inputs, const std::optional<OpStrategy>& strategy,
                    int64_t devices);

/// What an op without a strategy gets in semi-auto mode (MindSpore's default): its batch loop
/// (that of output dim 0, or of input 0's dim 0 for a scalar result) split over every device
/// where that divides each dim on it, else nothing split (every device computes all of it).
OpStrategy default_strategy(const Node& node, const std::vector<Shape>& inputs, int64_t devices);

}  // namespace sf
