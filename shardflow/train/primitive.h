/// @file
/// Primitive: an op a cell holds and calls in construct(), as MindSpore's ops.MatMul() held by
/// a Cell, so that it can be sharded: `matmul1.shard(in_strategy, out_strategy)`.
///
/// @code
///   class Network : public nn::Cell {
///     Primitive& matmul1 = register_primitive("matmul1", "MatMul");
///     ...
///     Value construct(GraphBuilder& b, Value x) override { return matmul1(b, {x, param(b, w)}); }
///   };
///   net.matmul1.shard({layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")},
///                     {layout({"mp", "sp", "dp"}, "None")});
///   net.relu1.shard({{4, 1}});
/// @endcode
///
/// Calling it adds the op under the scope of its instance name ("matmul1/MatMul" in the IR) and
/// remembers the nodes it added, so that Cell::strategies() can key its strategy by node name.
/// An empty instance name adds the op in the caller's scope: a cell that is one op (nn::Conv2d)
/// holds its op that way, so the op keeps the name the cell gives it ("conv1/Conv2D").
/// Strategies take effect in semi-auto parallel mode and are ignored in the others.
///
/// Threading: as the cell that owns it (one thread while building).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <shardflow/ops/builder.h>
#include <shardflow/parallel/sharding/op_strategy.h>

namespace sf {

/// An op a cell holds and calls in construct(), so that it can be sharded.
class Primitive {
 public:
  /// `instance_name` is its scope in the IR; `op` is a registered op name; `attrs` its attributes (MatMul's transpose_b, ...).
  Primitive(std::string instance_name, std::string op, Attrs attrs = {});

  /// Replaces the strategy; checked against the op's inputs when a parallel graph is built.
  Primitive& shard(std::vector<TensorStrategy> in_strategy, std::vector<TensorStrategy> out_strategy = {});
  /// The strategy shard() set, if any.
  const std::optional<OpStrategy>& strategy() const { return strategy_; }

  /// Adds the op on `inputs` to `b` under the instance name's scope; returns its output.
  Value operator()(GraphBuilder& b, std::vector<Value> inputs) { return (*this)(b, std::move(inputs), {}); }
  /// The same, with `extra` attributes set over the primitive's own (BatchNorm's training flag,
  /// which the cell's mode picks for each graph).
  Value operator()(GraphBuilder& b, std::vector<Value> inputs, const Attrs& extra);

  /// The name it was created with, e.g.\ "matmul1".
  const std::string& instance_name() const { return instance_; }
  /// The graph nodes it has added, by name.
  const std::set<std::string>& node_names() const { return nodes_; }

 private:
  std::string instance_, op_;
  Attrs attrs_;
  std::optional<OpStrategy> strategy_;
  std::set<std::string> nodes_;
};

}  // namespace sf
