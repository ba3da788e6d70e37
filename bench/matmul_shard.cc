// A 4096x4096x4096 f32 MatMul Y = X W sharded 8 ways on 8 virtual devices in one process,
// through the operator-parallel path (shard_graph, each rank's local graph on the actor
// runtime, its collectives on the collective actors), in three strategies, against one
// OpenBLAS sgemm of the whole problem with as many BLAS threads as there are devices:
//
//   row split     ((8,1),(1,1))  each rank X's row block times all of W, no communication
//   column split  ((1,1),(1,8))  all of X times W's column block, no communication
//   reduce split  ((1,8),(8,1))  X's column block times W's row block: partial sums, then the
//                                AllReduce of the whole 64 MiB output over the 8 ranks
//
// Prints a table: median time of --reps runs after a warm-up, the ratio to sgemm, the target
// (<= 1.25x for row and column, <= 1.6x for reduce), W's bytes per rank against its total, and
// the largest difference of any rank's result block from the same block of sgemm's result.
// A second sgemm row uses one BLAS thread per core, for reference on machines with fewer
// cores than devices.
//
//   ./build/bench/matmul_shard [--n 4096] [--reps 5] [--devices 8]
#include <cblas.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <chrono>
#include <fmt/format.h>
#include <map>
#include <mutex>
#include <thread>

#include <shardflow/core/cli_checks.h>
#include <shardflow/comm/barrier.h>
#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/rng.h>
#include <shardflow/ops/blas.h>
#include <shardflow/ops/builder.h>
#include <shardflow/parallel/sharding/graph_sharding.h>
#include <shardflow/parallel/sharding/local_block.h>
#include <shardflow/parallel/sharding/local_graph.h>
#include <shardflow/actors/runtime.h>

namespace {

using Clock = std::chrono::steady_clock;

struct Case {
  const char* name;
  sf::OpStrategy strategy;
  double target;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

sf::Tensor random_matrix(int64_t n, uint64_t stream) {
  sf::Tensor t({n, n});
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = sf::uniform_at(7, stream, static_cast<uint64_t>(i)) - 0.5f;
  return t;
}

struct CaseResult {
  std::vector<double> times;  // rank 0's
  int64_t w_bytes = 0;        // W's block on a rank
  float max_diff = 0;         // over every rank's result block, against `want`
};

// One strategy: every rank builds its local graph and runtime, runs once to warm up, then
// `reps` timed steps between barriers.
CaseResult run_case(const sf::Graph& g, int y, const Case& c, const sf::Tensor& x, const sf::Tensor& w,
                    const sf::Tensor& want, int reps) {
  const int64_t devices = sf::comm::job().size;
  const sf::GraphSharding sharding = sf::shard_graph(g, {y}, {{"matmul", c.strategy}}, devices);
  CaseResult result;
  std::mutex mu;
  sf::comm::run_ranks([&] {
    const int rank = sf::comm::get_rank();
    const sf::LocalGraph local = sf::build_local_graph(g, sharding, rank);
    sf::RuntimeOptions opts;
    for (const auto& [name, ranks] : local.groups) opts.collectives.add(sf::comm::create_group(name, ranks));
    sf::Runtime runtime(local.graph, {local.value[y]}, opts);
    sf::Runtime::Feeds feeds;
    for (const sf::LocalGraph::Source& s : local.inputs) feeds.emplace_back(s.local, sf::local_block(x, s.layout, rank));
    for (const sf::LocalGraph::Source& s : local.parameters) {
      const sf::Tensor block = sf::local_block(w, s.layout, rank);
      runtime.bind(s.local, block.clone());  // the rank's own copy, as a sharded parameter is
      if (rank == 0) result.w_bytes = static_cast<int64_t>(block.nbytes());
    }
    // Warm-up (buffers allocated, collectives connected), checked against sgemm's result.
    const sf::Tensor got = runtime.run(feeds)[0];
    const sf::Tensor expect = sf::local_block(want, sharding.at(y).layout, rank);
    float diff = 0;
    for (int64_t i = 0; i < got.numel(); ++i) diff = std::max(diff, std::abs(got.f32()[i] - expect.f32()[i]));
    {
      std::lock_guard<std::mutex> lock(mu);
      result.max_diff = std::max(result.max_diff, diff);
    }
    for (int r = 0; r < reps; ++r) {
      sf::comm::barrier({});
      const auto t0 = Clock::now();
      runtime.run(feeds);
      sf::comm::barrier({});
      if (rank == 0) {
        std::lock_guard<std::mutex> lock(mu);
        result.times.push_back(seconds_since(t0));
      }
    }
    for (const auto& [name, ranks] : local.groups) sf::comm::destroy_group(name);
  });
  return result;
}

// Median time of one sgemm of the whole problem on `threads` BLAS threads (after a warm-up).
double time_sgemm(const sf::Tensor& x, const sf::Tensor& w, sf::Tensor& out, int threads, int reps) {
  const int n = static_cast<int>(x.dim(0));
  sf::set_blas_threads(threads);
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) {
    const auto t0 = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, x.f32(), n, w.f32(), n, 0.0f, out.f32(), n);
    if (r > 0) times.push_back(seconds_since(t0));
  }
  return median(times);
}

std::string mib(int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<char*> args(argv, argv + argc);
    std::string devices_arg = "--devices", eight = "8";
    if (std::none_of(args.begin(), args.end(), [](const char* a) { return std::string(a) == "--devices"; })) {
      args.push_back(devices_arg.data());  // 8 virtual devices unless told otherwise
      args.push_back(eight.data());
    }
    int n_args = static_cast<int>(args.size());
    sf::comm::init(n_args, args.data());
    int64_t n = 4096;
    int reps = 5;
    CLI::App app{"Sharded MatMul on virtual devices against one whole sgemm"};
    app.add_option("--n", n, "M = K = N")->check(sf::cli::kPositive);
    app.add_option("--reps", reps, "timed runs per strategy (the median is reported)")->check(sf::cli::kPositive);
    CLI11_PARSE(app, n_args, args.data());
    const int devices = sf::comm::job().size;

    const sf::Tensor x = random_matrix(n, 1), w = random_matrix(n, 2);
    sf::Graph g;
    sf::GraphBuilder b(g);
    const int y = b.op("MatMul", {b.input("x", {n, n}), b.parameter("w", {n, n})}, {}, "matmul").id;

    // The reference: one sgemm of the whole problem on `devices` BLAS threads.
    sf::Tensor out({n, n});
    const double sgemm = time_sgemm(x, w, out, devices, reps);
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    const double sgemm_cores = cores != devices ? time_sgemm(x, w, out, cores, reps) : sgemm;
    sf::set_blas_threads(1);  // the actors call sgemm concurrently, one thread each

    const int64_t d = devices;
    const std::vector<Case> cases = {
        {"row split ((8,1),(1,1))", sf::OpStrategy{{{d, 1}, {1, 1}}}, 1.25},
        {"column split ((1,1),(1,8))", sf::OpStrategy{{{1, 1}, {1, d}}}, 1.25},
        {"reduce split ((1,8),(8,1)) + AllReduce", sf::OpStrategy{{{1, d}, {d, 1}}}, 1.6},
    };
    const int64_t w_total = n * n * 4;
    fmt::print("MatMul {0}x{0}x{0} f32 on {1} virtual devices ({2} cores), median of {3} runs, BLAS: {4}\n", n,
               devices, cores, reps, sf::blas_config());
    fmt::print("{:<40} {:>9} {:>9} {:>8}  {:>28}  {:>9}\n", "strategy", "time (s)", "vs sgemm", "target",
               "W per rank (total / shards)", "max diff");
    fmt::print("{:<40} {:>9.3f} {:>9} {:>8}  {:>28}\n", fmt::format("one sgemm, {} threads", devices), sgemm, "1.00x",
               "", mib(w_total));
    if (cores != devices)
      fmt::print("{:<40} {:>9.3f} {:>8.2f}x {:>8}  {:>28}\n", fmt::format("one sgemm, {} threads (one per core)", cores),
                 sgemm_cores, sgemm_cores / sgemm, "", mib(w_total));
    for (const Case& c : cases) {
      const CaseResult r = run_case(g, y, c, x, w, out, reps);
      const double t = median(r.times);
      fmt::print("{:<40} {:>9.3f} {:>8.2f}x {:>7.2f}x  {:>28}  {:>9.1e}\n", c.name, t, t / sgemm, c.target,
                 fmt::format("{} ({} / {})", mib(r.w_bytes), mib(w_total), w_total / r.w_bytes), r.max_diff);
    }
    sf::comm::release();
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
