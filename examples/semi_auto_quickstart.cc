// Quick start of (semi-)auto parallel training, as seed 002 (MindSpore's
// distributed_training_quickstart/net.py): a one-hidden-layer network whose matmul is sharded
// ((2, 4), (4, 1)) over 8 devices — the batch in 2 blocks, the reduce dim in 4, so matmul's
// partial sums are AllReduced over ranks 0-1-2-3 and 4-5-6-7 — trained on random data with
// MSELoss and Momentum, a checkpoint per rank, and the parallel IR saved per rank.
//
//   ./build/examples/semi_auto_quickstart --devices 8             # 8 virtual devices, one process
//   sfrun -n 8 ./build/examples/semi_auto_quickstart              # 8 processes
//   mpirun -np 8 ./build/examples/semi_auto_quickstart
//   grep -A1 AllReduce saved_graph/rank_0/execute.ir             # the seed's 18_execute_*.ir lines
//
// As in the seed, the mode is AUTO_PARALLEL with sharding propagation: relu and matmul2 get
// their strategies from matmul's ((2, 4) and ((2, 4), (4, 1)), as the seed's
// step_parallel_begin IR shows); --semi-auto runs SEMI_AUTO_PARALLEL instead, where they get
// the default (the batch split over every device). The seed's per-device batch of 2
// (dataset_strategy="data_parallel") is a global batch of 2 x devices that every rank reads
// whole and is fed its block of.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "examples/seed002_net.h"
#include <shardflow/shardflow.h>

namespace {

namespace ds = sf::dataset;
namespace nn = sf::nn;

struct Options {
  std::string log_dir = "log_output";
  std::string save_graphs_path = "saved_graph";
  std::string checkpoint_dir = ".";
  std::string strategy_file;
  bool semi_auto = false;
};

using seed002::get_dataset;
using seed002::Net;

}  // namespace

int main(int argc, char** argv) {
  try {
    // The job (--devices N, or the ranks sfrun / mpirun / Slurm started) is known from argv and
    // the environment, but joined only once the inputs are checked: a rank whose peers never
    // come must still stop at once on a bad input.
    const sf::comm::JobSpec spec = sf::comm::resolve_job(sf::comm::consume_comm_args(argc, argv), sf::comm::process_env());
    Options o;
    CLI::App app{"Seed 002's quick start: semi-auto parallel training of a sharded matmul"};
    app.add_option("--log-dir", o.log_dir, "per-rank logs when this process holds several devices");
    app.add_option("--save-graphs-path", o.save_graphs_path, "where each rank's parallel IR goes (DIR/rank_<r>/)");
    app.add_option("--checkpoint-dir", o.checkpoint_dir, "each rank's checkpoints go to DIR/<rank>/");
    app.add_option("--strategy-file", o.strategy_file, "load the ops' strategies from this JSON file");
    app.add_flag("--semi-auto", o.semi_auto, "SEMI_AUTO_PARALLEL (unsharded ops get the default) instead of propagation");
    CLI11_PARSE(app, argc, argv);
    const sf::StrategyTable from_file = o.strategy_file.empty() ? sf::StrategyTable{} : sf::load_strategy_file(o.strategy_file);
    sf::comm::init(spec);

    const int64_t var_step_per_epoch = 4;
    const int64_t var_single_batch_size = 2;
    const int64_t var_in_dim = 32;
    const int64_t var_hidden_dim = 16;
    const int64_t var_out_dim = 16;

    // Parallel mode is fully automatic parallelism, the strategy search is strategy propagation.
    if (o.semi_auto)
      sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
    else
      sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kAutoParallel,
                                     .search_mode = "sharding_propagation",
                                     .dataset_strategy = "data_parallel"});
    sf::set_seed(1);
    const int device_num = sf::comm::job().size;
    // Randomly constructed dataset, the global batch every rank reads.
    ds::Dataset fake_dataset =
        get_dataset(var_single_batch_size * device_num, var_in_dim, var_out_dim, var_step_per_epoch);
    const bool several = sf::comm::job().local_ranks > 1;
    const std::string job_dir = several ? sf::new_job_dir(o.log_dir) : "";

    sf::comm::run_ranks([&] {
      const int rank_id = sf::comm::get_rank();
      sf::RankLog log(job_dir);
      Net net(var_in_dim, var_hidden_dim, var_out_dim);
      // The seed shards in Net.__init__; here after it, so that a strategy file can replace it.
      // (2, 4): the input's batch in 2 blocks, its width in 4; (4, 1): the weight's height in 4.
      if (from_file.empty()) net.matmul.shard({{2, 4}, {4, 1}});
      for (const auto& [op, strategy] : from_file) net.shard(op, strategy);
      const float learning_rate = 0.2f, momentum = 0.1f;
      const int64_t epoch_size = 5;
      auto opt = std::make_shared<nn::Momentum>(net.trainable_params(), learning_rate, momentum);
      sf::Model model(net, std::make_shared<nn::MSELoss>(), opt);
      auto save_graphs = std::make_shared<sf::SaveGraphs>(model, o.save_graphs_path);
      std::vector<sf::CallbackPtr> callback = {
          std::make_shared<sf::LossMonitor>(1, log.out()),
          std::make_shared<sf::ModelCheckpoint>("checkpoint", fmt::format("{}/{}", o.checkpoint_dir, rank_id)),
          save_graphs};
      model.train(epoch_size, fake_dataset, callback);
      if (rank_id == 0)
        std::cout << fmt::format("{} devices: loss lines in {}, parallel IR in {}/rank_*/\n", device_num,
                                 several ? job_dir + "/rank.*/stdout" : "stdout", o.save_graphs_path);
    });
    sf::comm::release();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
