/// @file
/// The seeds' MLP (seed 001's Network, 784-512-512-10): Flatten, then per layer
/// `x @ fc<i>_weight + fc<i>_bias` with weights stored (in, out) as seed 001 declares them, and
/// ReLU between layers. Initialised as PyTorch's Linear / MindSpore's Dense defaults:
/// U(±1/sqrt(in)) for weights and biases. Storing W as (in, out) makes the forward GEMM a
/// plain x @ W, which OpenBLAS runs ~25% faster than x @ W^T at batch 32.
#pragma once

#include <vector>

#include <shardflow/train/cell.h>

namespace sf::nn {

/// The seeds' MLP: in -> hidden[0] -> ... -> out, ReLU between the layers.
class Mlp : public Cell {
 public:
  /// Layers of sizes in, hidden..., out; parameters fc1_weight, fc1_bias, ...
  Mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out);
  /// Flatten, then each layer's x @ W + b, ReLU between layers.
  Value construct(GraphBuilder& b, Value x) override;

 private:
  std::vector<Parameter*> weights_, biases_;
};

}  // namespace sf::nn
