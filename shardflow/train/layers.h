// The basic cells: Dense, ReLU, Flatten and SequentialCell (MindSpore nn names).
#pragma once

#include <initializer_list>

#include <shardflow/train/cell.h>

namespace sf::nn {

// y = x W^T + b with W of shape (out, in), as MindSpore's nn.Dense. The default
// initializers equal MindSpore 2.x's and PyTorch's Linear (see train/initializer.h).
class Dense : public Cell {
 public:
  Dense(int64_t in_channels, int64_t out_channels, const std::string& weight_init = "dense_weight",
        const std::string& bias_init = "dense_bias", bool has_bias = true);
  Value construct(GraphBuilder& b, Value x) override;
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 private:
  Parameter weight_, bias_;
};

class ReLU : public Cell {
 public:
  Value construct(GraphBuilder& b, Value x) override { return b.relu(x); }
};

class Flatten : public Cell {
 public:
  Value construct(GraphBuilder& b, Value x) override { return b.flatten(x); }
};

// Runs its cells in order; child i is named "i".
class SequentialCell : public Cell {
 public:
  SequentialCell(std::initializer_list<CellPtr> cells);
  explicit SequentialCell(const std::vector<CellPtr>& cells);
  Value construct(GraphBuilder& b, Value x) override;

 private:
  std::vector<CellPtr> cells_;
};

}  // namespace sf::nn
