// Seed 002's network and random dataset (its net.py), shared by the examples that train them:
// auto_parallel_quickstart (AUTO_PARALLEL, as the seed) and semi_auto_quickstart (its
// SEMI_AUTO_PARALLEL variant), so the two train the same model.
#pragma once

#include <shardflow/shardflow.h>

namespace seed002 {

namespace ds = sf::dataset;
namespace nn = sf::nn;

// The seed's get_dataset: one random batch (uniform [0, 1), seed 1) yielded step_per_epoch times.
inline ds::Dataset get_dataset(int64_t batch_size, int64_t in_dim, int64_t out_dim, int64_t step_per_epoch) {
  const uint64_t seed = 1;  // np.random.seed(1)
  auto generate = [=](int64_t i) {
    const int64_t row = i % batch_size;
    sf::Tensor input_data({in_dim}), label_data({out_dim});
    for (int64_t k = 0; k < in_dim; ++k) input_data.f32()[k] = sf::uniform_at(seed, 0, row * in_dim + k);
    for (int64_t k = 0; k < out_dim; ++k) label_data.f32()[k] = sf::uniform_at(seed, 1, row * out_dim + k);
    return std::vector<sf::Tensor>{input_data, label_data};
  };
  return ds::Dataset::generator(generate, batch_size * step_per_epoch, {"input", "label"}).batch(batch_size);
}

// The seed's Net: matmul, relu, matmul2; the examples shard matmul.
class Net : public nn::Cell {
 public:
  Net(int64_t in_dim, int64_t hidden_dim, int64_t out_dim)
      : weight(register_parameter("w", {in_dim, hidden_dim}, "normal")),
        weight2(register_parameter("w2", {hidden_dim, out_dim}, "normal")) {}

  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override {
    sf::Value out = matmul(b, {x, param(b, weight)});
    out = relu(b, {out});
    out = matmul2(b, {out, param(b, weight2)});
    return out;
  }

  sf::Parameter& weight;
  sf::Parameter& weight2;
  sf::Primitive& matmul = register_primitive("matmul", "MatMul");
  sf::Primitive& relu = register_primitive("relu", "ReLU");
  sf::Primitive& matmul2 = register_primitive("matmul2", "MatMul");
};

// The seed shards matmul ((2, 4), (4, 1)) on 8 devices: its input's batch in 2 blocks, the
// reduce dim in 4. On N devices the reduce dim goes in b blocks, b the largest power of two
// dividing N up to the seed's 4, and the batch (2 x N rows) in N / b: ((N/b, b), (b, 1)), the
// seed's on 8, ((3, 1), (1, 1)) on 3, nothing split on 1.
inline void shard_matmul(Net& net, int64_t devices) {
  int64_t b = 1;
  while (b < 4 && devices % (2 * b) == 0) b *= 2;
  net.matmul.shard({{devices / b, b}, {b, 1}});
}

// The network and its loss on the global shapes of `batch` rows, unsharded: the graph a
// strategy file is checked against.
inline int global_graph(sf::Graph& g, int64_t batch, int64_t in_dim, int64_t hidden_dim, int64_t out_dim) {
  Net net(in_dim, hidden_dim, out_dim);
  net.trainable_params();
  sf::GraphBuilder b(g);
  const sf::Value out = net(b, b.input("input0", {batch, in_dim}));
  return nn::MSELoss()(b, out, b.input("input1", {batch, out_dim})).id;
}

}  // namespace seed002
