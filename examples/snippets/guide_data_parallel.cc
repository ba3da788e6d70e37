// The library guide's program (docs/library_guide.md), data parallel: the one-device program's
// network and data, trained on every rank of the job on its own shard, the gradients averaged
// over the ranks; evaluation and a checkpoint per rank. Run with --devices N (virtual devices in
// this process), or under sfrun / mpirun (one rank per process).
#include <iostream>

#include <shardflow/shardflow.h>

#include "examples/snippets/guide_mlp.h"

int main(int argc, char** argv) try {
  // [data_parallel]
  sf::comm::init(argc, argv);  // takes --devices N (and the comm options) out of argv
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kDataParallel, .gradients_mean = true});
  // Several ranks in this process: rank 0's lines on stdout, every rank's in
  // log_output/<job>/rank.<r>/stdout (LogRanks::kAll prefixes every rank's line on stdout instead).
  if (sf::comm::job().local_ranks > 1) sf::set_log_ranks(sf::LogRanks::kRank0, sf::new_job_dir("log_output"));
  sf::comm::run_ranks([&] {  // once per rank of this process, each on its own thread
    const int rank = sf::comm::get_rank(), ranks = sf::comm::get_group_size();
    sf::set_seed(1);
    Mlp3 net;  // one network per rank: a network shared by rank threads is refused
    sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::Adam(net.trainable_params(), 1e-3f));
    // Each rank reads its own shard; 64 rows per rank and step, so the global batch is 64 x ranks.
    sf::dataset::Dataset train_set = fashion_mnist("train", 3200, ranks, rank).shuffle(7).batch(64);
    auto checkpoints = std::make_shared<sf::ModelCheckpoint>("mlp", "guide_dp_checkpoints/rank_" + std::to_string(rank));
    model.train(2, train_set, {std::make_shared<sf::LossMonitor>(10), checkpoints});
    // Every rank holds the same parameters, so every rank reports the same accuracy.
    const double accuracy = model.eval_accuracy(fashion_mnist("test", 1000).batch(250, false));
    sf::log_line("test accuracy: " + std::to_string(accuracy));  // a line of this rank's, as LossMonitor's
  });
  sf::comm::release();
  // [data_parallel]
  return 0;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
