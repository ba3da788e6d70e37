// Fully automatic parallel training, as seed 002's net.py (MindSpore's
// distributed_training_quickstart): only matmul is sharded, ((2, 4), (4, 1)) over 8 devices;
// AUTO_PARALLEL with search_mode "sharding_propagation" gives relu ((2, 4),) and matmul2
// ((2, 4), (4, 1)) from it. A random dataset, MSELoss, Momentum, 5 epochs, a checkpoint per
// rank in <rank>/, the same loss lines on every rank.
//
//   ./build/examples/auto_parallel_quickstart --devices 8             # 8 virtual devices, one process
//   sfrun -n 8 ./build/examples/auto_parallel_quickstart              # 8 processes
//   mpirun -np 8 ./build/examples/auto_parallel_quickstart
//   ./build/examples/auto_parallel_quickstart --devices 8 --explain --save-strategy-file strategies.json
//   ./build/examples/auto_parallel_quickstart --dry-run 4096          # the plan for 4096 ranks, none started
//   ./build/examples/auto_parallel_quickstart --devices 8 --checkpoint-dir run --save-every 10
//   ./build/examples/auto_parallel_quickstart --devices 2 --resume run   # the whole state, resharded
//
// The seed's own checkpoint per rank (ModelCheckpoint) goes to --rank-checkpoint-dir DIR/<rank>/;
// --checkpoint-dir saves the whole training state as one distributed checkpoint (docs/checkpoints.md).
//
// --explain prints why each op got its strategy (the neighbour it came from, the costs
// compared); the IR of every rank goes to saved_graph/rank_<r>/ (save_graphs in the seed),
// its step_parallel_begin.ir showing each op's strategy; --save-strategy-file writes the
// strategies the search chose. docs/auto_parallel.md describes all three and --dry-run.
//
// Any number of devices, 1 included: on N, matmul is sharded ((N/b, b), (b, 1)), b the largest
// power of two dividing N up to the seed's 4 (seed002_net.h), and the search derives the
// others from it. --batch is per device (the seed's 2): N devices with --batch B train the
// 1-device run's batch of N x B rows. --strategy-file FILE replaces the shard() call.
#include <fmt/format.h>

#include "examples/example_main.h"
#include "examples/seed002_net.h"
#include "examples/strategy_options.h"
#include <shardflow/core/cli_checks.h>
#include <shardflow/shardflow.h>
#include <shardflow/train/network_plan.h>

namespace {

namespace ds = sf::dataset;
namespace nn = sf::nn;
namespace ex = sf::examples;

struct Options {
  std::string save_graphs_path = "saved_graph";
  std::string rank_checkpoint_dir = ".";  // the seed's ModelCheckpoint files, DIR/<rank>/
  ex::StrategyOptions strategies;
  int64_t batch = 2;  // per device, the seed's var_single_batch_size
  int64_t dry_run = 0;
};

using seed002::get_dataset;
using seed002::Net;

const int64_t var_step_per_epoch = 4;
const int64_t var_in_dim = 32;
const int64_t var_hidden_dim = 16;
const int64_t var_out_dim = 16;

// The seed's Net with the sharding strategy set for matmul only (the others are left to the
// search), or the strategy file's.
void shard(Net& net, const sf::StrategyTable& from_file, int64_t devices) {
  if (from_file.empty()) seed002::shard_matmul(net, devices);
  for (const auto& [op, strategy] : from_file) net.shard(op, strategy);
}

// --dry-run N: the plan for N ranks of the global batch N ranks would read, none started.
void dry_run(const Options& o, const sf::StrategyTable& from_file) {
  Net net(var_in_dim, var_hidden_dim, var_out_dim);
  shard(net, from_file, o.dry_run);
  nn::MSELoss loss;
  const int64_t batch = o.batch * o.dry_run;
  const sf::NetworkPlan plan = sf::plan_network(
      net, [&](sf::GraphBuilder& b, const std::vector<sf::Value>& in) { return loss(b, net(b, in[0]), in[1]); },
      {{batch, var_in_dim}, {batch, var_out_dim}}, {sf::DType::kF32, sf::DType::kF32}, o.dry_run);
  std::cout << plan.str(o.strategies.explain);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::Example example("Seed 002's quick start: fully automatic parallel training with sharding propagation",
                      ex::kLogDir | ex::kEpochs | ex::kCheckpoint);
  example.common().epochs = 5;  // the seed's epoch_size
  CLI::App& app = example.cli();
  app.add_option("--save-graphs-path", o.save_graphs_path, "where each rank's parallel IR goes (DIR/rank_<r>/)");
  app.add_option("--rank-checkpoint-dir", o.rank_checkpoint_dir,
                 "each rank's seed-format checkpoints go to DIR/<rank>/");
  app.add_option("--batch", o.batch, "batch size per device (the global batch is batch x devices)")
      ->check(sf::cli::kPositive);
  ex::add_strategy_options(app, o.strategies);
  app.add_option("--dry-run", o.dry_run, "plan the job for N ranks without starting any, and print per rank "
                                         "its memory and the bytes each collective moves per step")
      ->check(sf::cli::kPositive);

  sf::StrategyTable from_file;
  ds::Dataset fake_dataset;
  example.prepare = [&](const sf::comm::JobSpec& job) {
    // Parallel mode is fully automatic parallelism, the strategy search is strategy propagation.
    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kAutoParallel,
                                   .search_mode = "sharding_propagation",
                                   .dataset_strategy = "data_parallel",
                                   .strategy_ckpt_save_file = o.strategies.save_strategy_file});
    sf::set_seed(1);
    const int64_t devices = o.dry_run > 0 ? o.dry_run : job.size;
    const int64_t batch = o.batch * devices;
    from_file = ex::load_strategies(
        o.strategies,
        [&](sf::Graph& g) { return seed002::global_graph(g, batch, var_in_dim, var_hidden_dim, var_out_dim); },
        static_cast<int>(devices));
    if (o.dry_run > 0) {
      dry_run(o, from_file);
      return ex::Next::kDone;
    }
    // The seed's per-device batch of 2 under dataset_strategy="data_parallel" is a global batch
    // of 2 x devices, which every rank reads whole and is fed its block of.
    fake_dataset = get_dataset(batch, var_in_dim, var_out_dim, var_step_per_epoch);
    return ex::Next::kJoin;
  };
  example.run = [&] {
    const int device_num = sf::comm::job().size;
    sf::comm::run_ranks([&] {
      const int rank_id = sf::comm::get_rank();
      Net net(var_in_dim, var_hidden_dim, var_out_dim);
      shard(net, from_file, device_num);
      sf::Model model(net, std::make_shared<nn::MSELoss>(),
                      std::make_shared<nn::Momentum>(net.trainable_params(), 0.2f, 0.1f));  // lr, momentum
      std::vector<sf::CallbackPtr> callback = {
          std::make_shared<sf::LossMonitor>(1),
          std::make_shared<sf::ModelCheckpoint>("checkpoint", fmt::format("{}/{}", o.rank_checkpoint_dir, rank_id)),
          std::make_shared<sf::SaveGraphs>(model, o.save_graphs_path)};
      // --checkpoint-dir: the whole training state, a distributed checkpoint every rank saves.
      const sf::ResumePoint from = example.checkpointing(model, fake_dataset, callback);
      model.train(example.common().epochs, fake_dataset, callback, from);
      if (rank_id == 0) {
        // What the search decided, from the program the first step built. (The
        // --save-strategy-file file is the context's strategy_ckpt_save_file, written by rank 0.)
        if (o.strategies.explain)
          sf::write_line(std::cout, ex::explain(*model.semi_auto_program(), net.strategies(),
                                                from_file.empty() ? "shard()" : "the strategy file"));
        sf::write_line(std::cout, fmt::format("{} devices: loss lines in {}, checkpoints in {}/<rank>/, parallel IR in {}/rank_*/",
                                              device_num, example.logs_where(), o.rank_checkpoint_dir,
                                              o.save_graphs_path));
      }
    });
  };
  return example.main(argc, argv);
}
