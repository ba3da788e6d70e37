/// @file
/// The basic cells: Dense, ReLU, Flatten and SequentialCell (MindSpore nn names).
#pragma once

#include <initializer_list>

#include <shardflow/train/cell.h>

namespace sf::nn {

/// y = x W^T + b with W of shape (out, in), as MindSpore's nn.Dense. The default
/// initializers equal MindSpore 2.x's and PyTorch's Linear (see train/initializer.h).
class Dense : public Cell {
 public:
  /// A layer from in_channels to out_channels, its parameters from the named initializers.
  Dense(int64_t in_channels, int64_t out_channels, const std::string& weight_init = "dense_weight",
        const std::string& bias_init = "dense_bias", bool has_bias = true);
  /// Adds x W^T (+ b) to `b`'s graph.
  Value construct(GraphBuilder& b, Value x) override;
  /// W, of shape (out, in).
  Parameter& weight() { return weight_; }
  /// b, of shape (out); undefined without has_bias.
  Parameter& bias() { return bias_; }

 private:
  Parameter weight_, bias_;
};

/// max(x, 0) elementwise, as MindSpore's nn.ReLU.
class ReLU : public Cell {
 public:
  /// Adds the ReLU op to `b`'s graph.
  Value construct(GraphBuilder& b, Value x) override { return b.relu(x); }
};

/// (N, ...) -> (N, everything else), as MindSpore's nn.Flatten.
class Flatten : public Cell {
 public:
  /// Adds the Flatten op to `b`'s graph.
  Value construct(GraphBuilder& b, Value x) override { return b.flatten(x); }
};

/// Runs its cells in order; child i is named "i".
class SequentialCell : public Cell {
 public:
  ///@{
  /// The cells to run, in order.
  SequentialCell(std::initializer_list<CellPtr> cells);
  explicit SequentialCell(const std::vector<CellPtr>& cells);
  ///@}
  /// Each cell's construct on the previous one's output.
  Value construct(GraphBuilder& b, Value x) override;

 private:
  std::vector<CellPtr> cells_;
};

}  // namespace sf::nn
