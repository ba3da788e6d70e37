// docs/strategy_file.md's two ways to save and load a strategy file: through the parallel
// context (regions save and load) and by hand (region by_hand). A small MLP in semi-auto mode on
// synthetic data. Run with --devices N; fails unless the file saved by hand is the one the context wrote.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <shardflow/shardflow.h>

#include "examples/snippets/synthetic_data.h"

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) try {
  sf::comm::init(argc, argv);
  const sf::dataset::Dataset dataset = snippets::synthetic_dataset(8, 8);  // one step
  auto train_one_step = [&] {
    sf::comm::run_ranks([&] {
      sf::nn::Mlp net(4, {8}, 3);
      sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f));
      model.train(1, dataset);
    });
  };
  std::filesystem::remove("used.json");
  // [save]
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel,
                                 .strategy_ckpt_save_file = "used.json"});
  // [save]
  train_one_step();
  // [load]
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel,
                                 .strategy_ckpt_load_file = "used.json"});
  // [load]
  train_one_step();
  std::filesystem::rename("used.json", "strategies.json");
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
  sf::comm::run_ranks([&] {
    sf::nn::Mlp net(4, {8}, 3);
    // [by_hand]
    sf::StrategyTable table = sf::load_strategy_file("strategies.json");  // entries checked here
    for (const auto& [op, strategy] : table) net.shard(op, strategy);     // instead of shard() calls
    sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f));
    model.train(1, dataset);
    const sf::SemiAutoProgram& sp = *model.semi_auto_program();            // after a step
    if (sf::comm::get_rank() == 0)                                         // one writer
      sf::save_strategy_file("used.json", sp.global, sp.sharding);
    // [by_hand]
  });
  const bool same = read("used.json") == read("strategies.json");
  std::cout << "strategy file saved by hand " << (same ? "equals" : "differs from") << " the context's" << std::endl;
  sf::comm::release();
  return same ? 0 : 1;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
