/// @file
/// How a user shards one op: MindSpore's `op.shard(in_strategy, out_strategy)`. Each tensor's
/// entry is either a tuple strategy, (2, 4) = dim 0 in 2 blocks and dim 1 in 4, or a TensorLayout
/// from a named Layout call, layout("mp", ("sp", "dp")). An op takes tuples for all its inputs or
/// layouts for all of them; one network may mix the two forms across ops (seed 001).
///
/// A StrategyTable maps op node names ("fc1/MatMul") to their strategies. It is plain data on
/// purpose: Cell::strategies() fills it from shard() calls, and a strategy file can fill it too.
///
/// @code
///   OpStrategy s{{{2, 4}, {4, 1}}};                                    // seed 002's matmul
///   OpStrategy t{{layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")},
///                {layout({"mp", "sp", "dp"}, "None")}};               // seed 001's matmul1
/// @endcode
///
/// Threading: plain values.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <shardflow/parallel/strategy.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

/// One tensor's entry of an op strategy: a tuple strategy or a TensorLayout.
class TensorStrategy {
 public:
  ///@{
  /// A tuple strategy, e.g.\ {2, 4}.
  TensorStrategy(std::initializer_list<int64_t> blocks) : tuple_(blocks) {}  // NOLINT: {2, 4}
  TensorStrategy(Strategy blocks) : tuple_(std::move(blocks)) {}            // NOLINT
  ///@}
  /// A layout, e.g.\ layout("mp", {"sp", "dp"}).
  TensorStrategy(TensorLayout layout) : layout_(std::move(layout)) {}        // NOLINT

  /// True for a layout, false for a tuple strategy.
  bool is_layout() const { return layout_.has_value(); }
  /// The tuple strategy (empty for a layout).
  const Strategy& tuple() const { return tuple_; }
  /// The layout; only for is_layout().
  const TensorLayout& layout() const { return *layout_; }
  /// Number of tensor dims it describes.
  int dims() const { return is_layout() ? layout_->dims() : static_cast<int>(tuple_.size()); }
  /// "(2,4)" or the layout call as written.
  std::string str() const { return is_layout() ? layout_->spec() : strategy_str(tuple_); }

 private:
  Strategy tuple_;
  std::optional<TensorLayout> layout_;
};

/// How a user shards one op: an entry per input, and optionally the output's.
struct OpStrategy {
  std::vector<TensorStrategy> in;  ///< one per input, in input order
  std::vector<TensorStrategy> out = {};  ///< empty: the rule's default output layout

  /// "in_strategy ((2,4), (4,1))", with " out_strategy (...)" when there is one.
  std::string str() const;
};

/// Op strategies by op node name, e.g.\ "fc1/MatMul".
using StrategyTable = std::map<std::string, OpStrategy>;

}  // namespace sf
