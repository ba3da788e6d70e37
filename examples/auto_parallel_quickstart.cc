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
//
// --explain prints why each op got its strategy (the neighbour it came from, the costs
// compared); the IR of every rank goes to saved_graph/rank_<r>/ (save_graphs in the seed),
// its step_parallel_begin.ir showing each op's strategy; --save-strategy-file writes the
// strategies the search chose. docs/auto_parallel.md describes all three and --dry-run.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <shardflow/core/cli_checks.h>
#include "examples/seed002_net.h"
#include <shardflow/shardflow.h>
#include <shardflow/train/network_plan.h>

namespace {

namespace ds = sf::dataset;
namespace nn = sf::nn;

struct Options {
  std::string log_dir = "log_output";
  std::string save_graphs_path = "saved_graph";
  std::string checkpoint_dir = ".";
  std::string save_strategy_file;
  bool explain = false;
  int64_t dry_run = 0;
};

using seed002::get_dataset;

// The seed's Net, with the sharding strategy set for matmul only.
class Net : public seed002::Net {
 public:
  Net(int64_t in_dim, int64_t hidden_dim, int64_t out_dim) : seed002::Net(in_dim, hidden_dim, out_dim) {
    // (2, 4): matmul's input in two blocks of rows (batch) and four of columns (width);
    // (4, 1): its weight in four blocks of rows (height). The others are left to the search.
    matmul.shard({{2, 4}, {4, 1}});
  }
};

const int64_t var_step_per_epoch = 4;
const int64_t var_single_batch_size = 2;
const int64_t var_in_dim = 32;
const int64_t var_hidden_dim = 16;
const int64_t var_out_dim = 16;

// --dry-run N: the plan for N ranks of the global batch N ranks would read, none started.
void dry_run(const Options& o) {
  Net net(var_in_dim, var_hidden_dim, var_out_dim);
  nn::MSELoss loss;
  const int64_t batch = var_single_batch_size * o.dry_run;
  const sf::NetworkPlan plan = sf::plan_network(
      net, [&](sf::GraphBuilder& b, const std::vector<sf::Value>& in) { return loss(b, net(b, in[0]), in[1]); },
      {{batch, var_in_dim}, {batch, var_out_dim}}, {sf::DType::kF32, sf::DType::kF32}, o.dry_run);
  std::cout << plan.str(o.explain);
}

// What the search decided, from the program the first step built: --explain's printout. (The
// --save-strategy-file file is the context's strategy_ckpt_save_file, written by rank 0.)
void report_search(const Options& o, sf::Model& model) {
  if (o.explain) std::cout << model.semi_auto_program()->search.explain() << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    sf::comm::init(argc, argv);  // --devices N, or the ranks sfrun / mpirun / Slurm started
    Options o;
    CLI::App app{"Seed 002's quick start: fully automatic parallel training with sharding propagation"};
    app.add_option("--log-dir", o.log_dir, "per-rank logs when this process holds several devices");
    app.add_option("--save-graphs-path", o.save_graphs_path, "where each rank's parallel IR goes (DIR/rank_<r>/)");
    app.add_option("--checkpoint-dir", o.checkpoint_dir, "each rank's checkpoints go to DIR/<rank>/");
    app.add_flag("--explain", o.explain, "print why each op got its strategy");
    app.add_option("--save-strategy-file", o.save_strategy_file, "write the strategies the search chose to this JSON file");
    app.add_option("--dry-run", o.dry_run, "plan the job for N ranks without starting any, and print per rank "
                                           "its memory and the bytes each collective moves per step")
        ->check(sf::cli::kPositive);
    CLI11_PARSE(app, argc, argv);

    // Parallel mode is fully automatic parallelism, the strategy search is strategy propagation.
    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kAutoParallel,
                                   .search_mode = "sharding_propagation",
                                   .dataset_strategy = "data_parallel",
                                   .strategy_ckpt_save_file = o.save_strategy_file});
    sf::set_seed(1);
    if (o.dry_run > 0) {
      dry_run(o);
      sf::comm::release();
      return 0;
    }
    const int device_num = sf::comm::job().size;
    // The seed's per-device batch of 2 under dataset_strategy="data_parallel" is a global batch
    // of 2 x devices, which every rank reads whole and is fed its block of.
    ds::Dataset fake_dataset =
        get_dataset(var_single_batch_size * device_num, var_in_dim, var_out_dim, var_step_per_epoch);
    const bool several = sf::comm::job().local_ranks > 1;
    const std::string job_dir = several ? sf::new_job_dir(o.log_dir) : "";

    sf::comm::run_ranks([&] {
      const int rank_id = sf::comm::get_rank();
      sf::RankLog log(job_dir);
      Net net(var_in_dim, var_hidden_dim, var_out_dim);
      sf::Model model(net, std::make_shared<nn::MSELoss>(),
                      std::make_shared<nn::Momentum>(net.trainable_params(), 0.2f, 0.1f));  // lr, momentum
      const int64_t epoch_size = 5;
      std::vector<sf::CallbackPtr> callback = {
          std::make_shared<sf::LossMonitor>(1, log.out()),
          std::make_shared<sf::ModelCheckpoint>("checkpoint", fmt::format("{}/{}", o.checkpoint_dir, rank_id)),
          std::make_shared<sf::SaveGraphs>(model, o.save_graphs_path)};
      model.train(epoch_size, fake_dataset, callback);
      if (rank_id == 0) {
        report_search(o, model);
        std::cout << fmt::format("{} devices: loss lines in {}, checkpoints in {}/<rank>/, parallel IR in {}/rank_*/\n",
                                 device_num, several ? job_dir + "/rank.*/stdout" : "stdout", o.checkpoint_dir,
                                 o.save_graphs_path);
      }
    });
    sf::comm::release();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
