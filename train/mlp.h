// The seeds' MLP: Flatten, then Dense+ReLU layers, then a Dense head (784-512-512-10 in
// seeds 001 and 004). Parameter names follow the seeds: "dense_relu_sequential.0.weight".
#pragma once

#include <vector>

#include "train/layers.h"

namespace sf::nn {

class Mlp : public Cell {
 public:
  Mlp(int64_t in, const std::vector<int64_t>& hidden, int64_t out, const std::string& weight_init = "dense_weight",
      const std::string& bias_init = "dense_bias");
  Value construct(GraphBuilder& b, Value x) override;

 private:
  CellPtr flatten_, layers_;
};

}  // namespace sf::nn
