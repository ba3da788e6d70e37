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
//   ./build/examples/semi_auto_quickstart --devices 8 --checkpoint-dir run --save-every 10
//   ./build/examples/semi_auto_quickstart --devices 8 --resume run  # continues from run's latest step
//
// The seed's own checkpoint per rank (ModelCheckpoint) goes to --rank-checkpoint-dir DIR/<rank>/;
// --checkpoint-dir saves the whole training state as one distributed checkpoint (docs/checkpoints.md).
//
// As in the seed, the mode is AUTO_PARALLEL with sharding propagation: relu and matmul2 get
// their strategies from matmul's ((2, 4) and ((2, 4), (4, 1)), as the seed's
// step_parallel_begin IR shows); --semi-auto runs SEMI_AUTO_PARALLEL instead, where they get
// the default (the batch split over every device). The seed's per-device batch of 2
// (dataset_strategy="data_parallel") is a global batch of 2 x devices that every rank reads
// whole and is fed its block of.
//
// Any number of devices, 1 included: on N, matmul is sharded ((N/b, b), (b, 1)), b the largest
// power of two dividing N up to the seed's 4 (seed002_net.h), the seed's ((2, 4), (4, 1)) on 8.
// --batch is per device (the seed's 2): N devices with --batch B train the 1-device run's batch
// of N x B rows. --strategy-file replaces the shard() call, --save-strategy-file writes every
// op's strategy, --explain prints where each came from.
#include <fmt/format.h>

#include "examples/example_main.h"
#include "examples/seed002_net.h"
#include "examples/strategy_options.h"
#include <shardflow/core/cli_checks.h>
#include <shardflow/shardflow.h>

namespace {

namespace ds = sf::dataset;
namespace nn = sf::nn;
namespace ex = sf::examples;

struct Options {
  std::string save_graphs_path = "saved_graph";
  std::string rank_checkpoint_dir = ".";  // the seed's ModelCheckpoint files, DIR/<rank>/
  ex::StrategyOptions strategies;
  int64_t batch = 2;  // per device, the seed's var_single_batch_size
  bool semi_auto = false;
};

using seed002::get_dataset;
using seed002::Net;

const int64_t var_step_per_epoch = 4;
const int64_t var_in_dim = 32;
const int64_t var_hidden_dim = 16;
const int64_t var_out_dim = 16;

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::Example example("Seed 002's quick start: semi-auto parallel training of a sharded matmul",
                      ex::kLogDir | ex::kEpochs | ex::kCheckpoint);
  example.common().epochs = 5;  // the seed's epoch_size
  CLI::App& app = example.cli();
  app.add_option("--save-graphs-path", o.save_graphs_path, "where each rank's parallel IR goes (DIR/rank_<r>/)");
  app.add_option("--rank-checkpoint-dir", o.rank_checkpoint_dir,
                 "each rank's seed-format checkpoints go to DIR/<rank>/");
  app.add_option("--batch", o.batch, "batch size per device (the global batch is batch x devices)")
      ->check(sf::cli::kPositive);
  ex::add_strategy_options(app, o.strategies);
  app.add_flag("--semi-auto", o.semi_auto, "SEMI_AUTO_PARALLEL (unsharded ops get the default) instead of propagation");

  sf::StrategyTable from_file;
  ds::Dataset fake_dataset;
  example.prepare = [&](const sf::comm::JobSpec& job) {
    const int64_t batch = o.batch * job.size;
    from_file = ex::load_strategies(
        o.strategies,
        [&](sf::Graph& g) { return seed002::global_graph(g, batch, var_in_dim, var_hidden_dim, var_out_dim); },
        job.size);
    // Randomly constructed dataset, the global batch every rank reads.
    fake_dataset = get_dataset(batch, var_in_dim, var_out_dim, var_step_per_epoch);
    return ex::Next::kJoin;
  };
  example.run = [&] {
    // Parallel mode is fully automatic parallelism, the strategy search is strategy propagation.
    if (o.semi_auto)
      sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel,
                                     .strategy_ckpt_save_file = o.strategies.save_strategy_file});
    else
      sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kAutoParallel,
                                     .search_mode = "sharding_propagation",
                                     .dataset_strategy = "data_parallel",
                                     .strategy_ckpt_save_file = o.strategies.save_strategy_file});
    sf::set_seed(1);
    const int device_num = sf::comm::job().size;
    sf::comm::run_ranks([&] {
      const int rank_id = sf::comm::get_rank();
      Net net(var_in_dim, var_hidden_dim, var_out_dim);
      // The seed shards in Net.__init__; here after it, so that a strategy file can replace it.
      if (from_file.empty()) seed002::shard_matmul(net, device_num);
      for (const auto& [op, strategy] : from_file) net.shard(op, strategy);
      const float learning_rate = 0.2f, momentum = 0.1f;
      auto opt = std::make_shared<nn::Momentum>(net.trainable_params(), learning_rate, momentum);
      sf::Model model(net, std::make_shared<nn::MSELoss>(), opt);
      auto save_graphs = std::make_shared<sf::SaveGraphs>(model, o.save_graphs_path);
      std::vector<sf::CallbackPtr> callback = {
          std::make_shared<sf::LossMonitor>(1),
          std::make_shared<sf::ModelCheckpoint>("checkpoint", fmt::format("{}/{}", o.rank_checkpoint_dir, rank_id)),
          save_graphs};
      // --checkpoint-dir: the whole training state, a distributed checkpoint every rank saves.
      const sf::ResumePoint from = example.checkpointing(model, fake_dataset, callback);
      model.train(example.common().epochs, fake_dataset, callback, from);
      if (rank_id == 0) {
        if (o.strategies.explain)
          sf::write_line(std::cout, ex::explain(*model.semi_auto_program(), net.strategies(),
                                                from_file.empty() ? "shard()" : "the strategy file"));
        sf::write_line(std::cout, fmt::format("{} devices: loss lines in {}, parallel IR in {}/rank_*/", device_num,
                                              example.logs_where(), o.save_graphs_path));
      }
    });
  };
  return example.main(argc, argv);
}
