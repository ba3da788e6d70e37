// Seed 001's network (examples/seed001_net.h) sharded on 8 devices, as the README and
// docs/operator_parallel.md show it: the README's strategies (region seed001), and
// docs/operator_parallel.md's strategies with an out_strategy (region semi_auto). Each trains a
// few steps of synthetic 28x28 images on every rank. Run with --devices 8, or 8 ranks under sfrun or mpirun.
#include <iostream>

#include <shardflow/shardflow.h>

#include "examples/seed001_net.h"

namespace {

using seed001::Network;

// 64 images of 28x28 and their labels, in batches of 32: the same on every rank.
sf::dataset::Dataset images() {
  return sf::dataset::Dataset::generator(
             [](int64_t i) {
               sf::Tensor x({1, 28, 28});
               for (int64_t k = 0; k < x.numel(); ++k) x.f32()[k] = static_cast<float>((i * 31 + k) % 17) / 17.0f;
               return std::vector<sf::Tensor>{x, sf::Tensor::from_vector({}, std::vector<int32_t>{static_cast<int32_t>(i % 10)})};
             },
             64, {"image", "label"})
      .batch(32);
}

}  // namespace

int main(int argc, char** argv) try {
  sf::comm::init(argc, argv);
  const sf::dataset::Dataset dataset = images();
  sf::comm::run_ranks([&] {
    Network net;
    // [seed001]
    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
    sf::Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
    net.matmul1.shard({layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")});
    net.relu1.shard({{4, 1}});
    sf::Layout layout2({8}, {"tp"});
    net.matmul2.shard({layout2("None", "tp"), layout2("tp", "None")});
    net.relu2.shard({{8, 1}});
    // [seed001]
    sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f));
    model.train(2, dataset, {std::make_shared<sf::LossMonitor>(1)});
  });
  // [semi_auto]
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
  sf::comm::run_ranks([&] {                                      // once per rank, each on its thread
    Network net;
    sf::Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
    net.matmul1.shard({layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")},
                      {layout({"mp", "sp", "dp"}, "None")});   // out_strategy: ReduceScatter
    net.relu1.shard({{4, 1}});                                   // a tuple: repeated calculation
    sf::Layout layout2({8, 1}, {"dp", "mp"});
    net.matmul2.shard({layout2("None", "dp"), layout2("dp", "None")});  // reduce dim split 8 ways
    sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f));
    model.train(10, dataset, {std::make_shared<sf::LossMonitor>(10)});
  });
  // [semi_auto]
  sf::comm::release();
  return 0;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
