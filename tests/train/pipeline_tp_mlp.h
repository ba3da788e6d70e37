// Test support for operator parallel inside pipeline stages: an MLP of four MatMul layers, a
// Primitive each so that shard() can cut it, and the Layout strategies that cut it Megatron's
// way (column-parallel then row-parallel MatMuls, the batch over a "dp" axis).
#pragma once

#include <memory>
#include <vector>

#include "tests/train/pipeline_net.h"
#include <shardflow/parallel/layout.h>
#include <shardflow/train/primitive.h>

namespace sf::traintest {

inline constexpr int kLayers = 4;

// One MatMul (and a ReLU but for the last layer), a Primitive each so that shard() can cut it.
class Layer : public nn::Cell {
 public:
  Layer(int64_t in, int64_t out, bool last) : last_(last) { w_ = &register_parameter("w", {in, out}, "he_uniform"); }
  Value construct(GraphBuilder& b, Value x) override {
    x = matmul(b, {x, param(b, *w_)});
    return last_ ? x : relu(b, {x});
  }
  Primitive& matmul = register_primitive("matmul", "MatMul");
  Primitive& relu = register_primitive("relu", "ReLU");

 private:
  Parameter* w_ = nullptr;
  bool last_;
};

inline std::shared_ptr<nn::SequentialCell> mlp(std::vector<std::shared_ptr<Layer>>& layers) {
  std::vector<nn::CellPtr> cells;
  for (int i = 0; i < kLayers; ++i) {
    const int64_t in = i == 0 ? kPipeFeatures : 24, out = i == kLayers - 1 ? 10 : 24;
    layers.push_back(std::make_shared<Layer>(in, out, i == kLayers - 1));
    cells.push_back(layers.back());
  }
  return std::make_shared<nn::SequentialCell>(cells);
}

// Even layers column-parallel (weight split by output columns over "tp"), odd layers
// row-parallel (split by input rows: a partial sum the planner reduces); the batch over "dp".
inline void shard_layers(std::vector<std::shared_ptr<Layer>>& layers, int64_t dp, int64_t tp) {
  Layout layout({dp, tp}, {"dp", "tp"});
  for (int i = 0; i < kLayers; ++i) {
    Layer& l = *layers[i];
    if (i % 2 == 0) {
      l.matmul.shard({layout("dp", "None"), layout("None", "tp")});
      l.relu.shard({{dp, tp}});
    } else {
      l.matmul.shard({layout("dp", "tp"), layout("tp", "None")});
      l.relu.shard({{dp, 1}});
    }
  }
}

}  // namespace sf::traintest
