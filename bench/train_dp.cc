// Data-parallel training throughput of the seed MLP (784-512-512-10, SGD lr 1e-2) on
// Fashion-MNIST: each rank trains Model::train on its shard with `--batch` rows per step, the
// gradients AllReduced in buckets while backward runs. One process per rank (zmq under
// sfrun's variables, mpi under mpirun) or virtual ranks (--devices N); one rank is the
// baseline, with the SGD update fused into the weight-gradient GEMM.
//
//   ./build-dp/bench/train_dp --batch 256                                   # 1 rank
//   SF_RANK=r SF_WORLD_SIZE=2 SF_RENDEZVOUS=ipc://... SF_JOB_SECRET=s ./train_dp --batch 256
//   mpirun -np 2 ./build-dp/bench/train_dp --batch 256
//   ./train_dp --batch 32 --unfused        # the SGD update as data parallel does it (no GEMM fusion)
//   ./train_dp ... --trace t.json          # Chrome trace of rank 0's steps (bench/trace_overlap.py)
//
// Timing as bench/train_mlp.cc: data pre-loaded, the clock runs from before the first step to
// after the last on rank 0; samples/s = steps * batch * ranks / time (the global rate). Prints
// "RESULT,..." CSV lines on rank 0 (median of --reps runs).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <shardflow/core/cli_checks.h>
#include <shardflow/ops/blas.h>
#include <shardflow/shardflow.h>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int64_t batch = 32, epochs = 1, bucket_bytes = -1;
  int reps = 3;
  bool unfused = false;
  std::string data_dir = "/usr/share/datasets/fashion-mnist", trace;
};

// Resident set size of this process in bytes (/proc/self/statm), 0 if unknown.
int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE));
}

// Counts steps between callbacks; nothing else happens between steps (but reading the RSS at
// two steps, when asked).
struct Count : sf::Callback {
  int64_t steps = 0;
  float last = 0;
  int64_t rss_early = 0, rss_late = 0;  // after kRssEarly and kRssLate steps
  static constexpr int64_t kRssEarly = 200, kRssLate = 2000;
  void on_step_end(const sf::RunContext& c) override {
    ++steps;
    last = c.loss;
    if (steps == kRssEarly) rss_early = rss_bytes();
    if (steps == kRssLate) rss_late = rss_bytes();
  }
};

// One rank's run through Model::train; returns seconds and steps (and the RSS readings).
std::pair<double, int64_t> run_model(const sf::dataset::Dataset& train_set, const Options& o, bool trace,
                                     std::pair<int64_t, int64_t>& rss) {
  sf::set_seed(0);
  sf::nn::Mlp net(28 * 28, {512, 512}, 10);
  sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f),
                  {.threads = 1, .trace = trace, .fuse_sgd = !o.unfused});
  auto count = std::make_shared<Count>();
  auto t0 = Clock::now();
  model.train(o.epochs, train_set, {count});
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (trace && sf::comm::get_rank() == 0) model.train_program()->runtime->write_trace(o.trace);
  rss = {count->rss_early, count->rss_late};
  return {secs, count->steps};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    sf::comm::init(argc, argv);
    Options o;
    CLI::App app{"shardflow data-parallel MLP training benchmark"};
    app.add_option("--batch", o.batch, "rows per rank per step")->check(sf::cli::kPositive);
    app.add_option("--epochs", o.epochs)->check(sf::cli::kPositive);
    app.add_option("--bucket-bytes", o.bucket_bytes, "gradient bucket size (default: the context's)");
    app.add_option("--reps", o.reps)->check(sf::cli::kPositive);
    app.add_flag("--unfused", o.unfused, "SGD update without GEMM fusion, as under data parallel (1 rank)");
    app.add_option("--trace", o.trace, "write rank 0's Chrome trace of the last repetition");
    app.add_option("--data-dir", o.data_dir);
    CLI11_PARSE(app, argc, argv);
    sf::AutoParallelContext ctx{.parallel_mode = sf::ParallelMode::kDataParallel, .gradients_mean = true};
    if (o.bucket_bytes >= 0) ctx.bucket_bytes = o.bucket_bytes;
    sf::set_auto_parallel_context(ctx);
    sf::comm::run_ranks([&] {
      using namespace sf::dataset;
      const int n = sf::comm::get_group_size(), rank = sf::comm::get_rank();
      Dataset train_set = Dataset::mnist(o.data_dir, "train", n, rank)
                              .map({Rescale(1.0f / 255.0f, 0.0f), HWC2CHW()}, "image")
                              .map({TypeCast(sf::DType::kI32)}, "label")
                              .shuffle(0)
                              .batch(o.batch);
      std::vector<double> rates;
      std::pair<int64_t, int64_t> rss;
      for (int r = 0; r < o.reps; ++r) {
        const bool trace = !o.trace.empty() && r + 1 == o.reps;
        auto [secs, steps] = run_model(train_set, o, trace, rss);
        rates.push_back(static_cast<double>(steps * o.batch * n) / secs);
      }
      std::sort(rates.begin(), rates.end());
      if (rank == 0)
        std::cout << "HEADER,what,ranks,transport,batch_per_rank,global_batch,bucket_bytes,samples_per_s,min,max\n"
                  << fmt::format("RESULT,{},{},{},{},{},{},{:.1f},{:.1f},{:.1f}\n", o.unfused ? "unfused" : "dp", n,
                                 sf::comm::job().backend, o.batch, o.batch * n,
                                 sf::get_auto_parallel_context().bucket_bytes, rates[rates.size() / 2], rates.front(),
                                 rates.back())
                  << std::flush;
      // Steady state allocates nothing that stays: the RSS after 2,000 steps against 200 (the
      // last repetition; needs --epochs enough for 2,000 steps).
      if (rank == 0 && rss.second > 0)
        std::cout << fmt::format("RSS,after_{}_steps_MiB,{:.1f},after_{}_steps_MiB,{:.1f},growth,{:+.2f}%\n",
                                 Count::kRssEarly, rss.first / 1048576.0, Count::kRssLate, rss.second / 1048576.0,
                                 100.0 * (rss.second - rss.first) / rss.first)
                  << std::flush;
    });
    sf::comm::release();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
