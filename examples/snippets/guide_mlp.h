// The library guide's network and data (docs/library_guide.md, sections 1 and 2), shared by
// its one-device and data-parallel programs.
#pragma once

#include <shardflow/shardflow.h>

// [network]
// A 3-layer MLP: 784 -> 256 -> 128 -> 10.
class Mlp3 : public sf::nn::Cell {
 public:
  Mlp3() {
    layers_ = register_cell("layers", std::make_shared<sf::nn::SequentialCell>(std::vector<sf::nn::CellPtr>{
        std::make_shared<sf::nn::Flatten>(),
        std::make_shared<sf::nn::Dense>(28 * 28, 256), std::make_shared<sf::nn::ReLU>(),
        std::make_shared<sf::nn::Dense>(256, 128), std::make_shared<sf::nn::ReLU>(),
        std::make_shared<sf::nn::Dense>(128, 10)}));
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override { return (*layers_)(b, x); }

 private:
  sf::nn::CellPtr layers_;
};
// [network]

// [data]
// Debian's Fashion-MNIST (package dataset-fashion-mnist): images scaled to [0, 1] and
// normalized, labels as int32; the first `rows` rows; one shard of `num_shards` when sharded.
inline sf::dataset::Dataset fashion_mnist(const std::string& usage, int64_t rows, int num_shards = 1, int shard_id = 0) {
  using namespace sf::dataset;
  return Dataset::mnist("/usr/share/datasets/fashion-mnist", usage, num_shards, shard_id)
      .map({Rescale(1.0f / 255.0f, 0.0f), Normalize({0.2860f}, {0.3530f}), HWC2CHW()}, "image")
      .map({TypeCast(sf::DType::kI32)}, "label")
      .take(rows);
}
// [data]
