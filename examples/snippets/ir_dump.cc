// docs/ir_dump.md's two ways to write each rank's parallel IR: from the parallel context
// (region context) and with the SaveGraphs callback (region callback). Trains a small MLP on
// synthetic data in semi-auto mode; fails unless both dumps are on disk. Run with --devices N.
#include <filesystem>
#include <iostream>

#include <shardflow/shardflow.h>

#include "examples/snippets/synthetic_data.h"

namespace {

// The rows of snippets::synthetic_dataset with one-hot f32 targets, for MSELoss.
sf::dataset::Dataset regression_rows() {
  return sf::dataset::Dataset::generator(
             [](int64_t i) {
               std::vector<sf::Tensor> row = snippets::synthetic_row(i);
               std::vector<float> target(3, 0.0f);
               target[static_cast<size_t>(row[1].i32()[0])] = 1.0f;
               return std::vector<sf::Tensor>{row[0], sf::Tensor::from_vector({3}, target)};
             },
             32, {"x", "y"})
      .batch(8);
}

bool dumped(const std::string& dir) { return std::filesystem::exists(dir + "/rank_0/execute.ir"); }

}  // namespace

int main(int argc, char** argv) try {
  sf::comm::init(argc, argv);
  const sf::dataset::Dataset dataset = regression_rows();
  std::filesystem::remove_all("saved_graph");
  // [context]
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel,
                                 .save_graphs = true, .save_graphs_path = "saved_graph"});
  // [context]
  sf::comm::run_ranks([&] {
    sf::nn::Mlp net(4, {8}, 3);
    sf::Model model(net, sf::nn::MSELoss(), sf::nn::Momentum(net.trainable_params(), 0.2f, 0.1f));
    model.train(1, dataset);
  });
  const bool from_context = dumped("saved_graph");
  std::filesystem::remove_all("saved_graph");
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
  sf::comm::run_ranks([&] {
    sf::nn::Mlp net(4, {8}, 3);
    // [callback]
    sf::Model model(net, sf::nn::MSELoss(), sf::nn::Momentum(net.trainable_params(), 0.2f, 0.1f));
    model.train(5, dataset, {std::make_shared<sf::SaveGraphs>(model, "saved_graph"),
                             std::make_shared<sf::LossMonitor>()});
    // [callback]
  });
  const bool from_callback = dumped("saved_graph");
  std::cout << "IR from the context: " << from_context << ", from the callback: " << from_callback << std::endl;
  sf::comm::release();
  return from_context && from_callback ? 0 : 1;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
