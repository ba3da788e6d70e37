// The library guide's program (docs/library_guide.md), data parallel: the one-device program's
// network and data, trained on every rank of the job on its own shard, the gradients averaged
// over the ranks; evaluation and a checkpoint per rank. Run with --devices N (virtual devices in
// this process), or under sfrun / mpirun (one rank per process).
#include <iostream>

#include <shardflow/shardflow.h>

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

sf::dataset::Dataset fashion_mnist(const std::string& usage, int64_t rows, int num_shards = 1, int shard_id = 0) {
  using namespace sf::dataset;
  return Dataset::mnist("/usr/share/datasets/fashion-mnist", usage, num_shards, shard_id)
      .map({Rescale(1.0f / 255.0f, 0.0f), Normalize({0.2860f}, {0.3530f}), HWC2CHW()}, "image")
      .map({TypeCast(sf::DType::kI32)}, "label")
      .take(rows);
}

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
