// OSU-style benchmark of the comm layer's collectives, comparable with the Open MPI peer
// (../shared/peers/mpi_allreduce_bench.c, figures in ../shared/research/peers.md section 1).
//
//   ./build/bench/sfbench_comm --transport inproc --ranks 2 --op allreduce --sizes 4K,64K,1M --budget 0.4
//   mpirun -np 2 --oversubscribe --allow-run-as-root --mca pml ob1 --mca btl self,vader
//       ./build/bench/sfbench_comm --transport mpi --op all --sizes 4K,64K,1M   (one line)
//
// --op takes one op, a comma-separated list or `all`; --algorithm forces one (comm/algorithm.h
// names; default `auto`, the table's choice), to measure the table's alternatives side by side.
// bench/comm_table.sh sweeps ops x sizes x ranks x transports into one table.
//
// inproc: --ranks virtual ranks as threads of this process over make_inproc_world(N); zmq:
// --ranks threads of this process over make_zmq_world(N) on real sockets (--zmq-scheme tcp on
// 127.0.0.1, or ipc), or, when SF_RANK is set (sfrun, or bench/compare_mpi.sh), one rank per
// process joined through SF_RANK, SF_WORLD_SIZE, SF_RENDEZVOUS and SF_JOB_SECRET (the data
// endpoints take the rendezvous's scheme); mpi: one rank per process of the mpirun job over
// make_mpi_world().
//
// Timing (as osu_allreduce): per size, the input tensor is allocated and filled once; warm-up
// calls (each followed by a barrier) size the first chunk of timed calls; every timed call is
// timed alone and followed by an untimed barrier, and chunks follow until the slowest rank has
// spent --budget seconds inside timed calls (at least --min-iters, at most --max-iters calls). A rank's figure is its mean time per call;
// the reported time is the mean over ranks. The collectives return a fresh output tensor per
// call (the API has no output argument), so that allocation is part of what is measured.
//
// Sizes follow nccl-tests, as the peer does: allreduce, reducescatter, alltoall = bytes of each
// rank's input; allgather = bytes of the gathered output (each rank sends bytes/n); broadcast =
// bytes broadcast from rank 0. Element counts are rounded down to a multiple of the rank count
// (as in the peer). algbw = bytes / time; busbw = algbw x 2(n-1)/n (allreduce), (n-1)/n
// (allgather, reducescatter, alltoall), 1 (broadcast). GB = 1e9 bytes.
//
// Correctness: inputs depend on (rank, index), and the result of the last timed call is checked
// element by element against the known answer (all small integers, exact in f32); errors =
// wrong elements summed over ranks.
//
// Output: rank 0 prints one HEADER line and one RESULT line per (op, size) (CSV) on stdout,
// nothing else; errors go to stderr and the exit code is 1. The `algorithm` column is the one
// the table picked (or the forced one) for that call.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fmt/format.h>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/core/cli_checks.h>
#include <shardflow/comm/comm.h>
#include <shardflow/comm/mpi/transport.h>
#include <shardflow/comm/zmq/transport.h>

namespace {

using Clock = std::chrono::steady_clock;
using sf::Tensor;
namespace comm = sf::comm;

enum class Op { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll };

struct Config {
  std::string transport = "inproc";
  int ranks = 2;
  std::vector<Op> ops;
  comm::Algorithm algorithm = comm::Algorithm::kAuto;
  std::vector<int64_t> sizes;
  double budget = 0.4;
  int warmup = 0;  // 0: 10 calls below 8 MiB, 3 from 8 MiB
  int64_t min_iters = 5;
  int64_t max_iters = 10000;
};

// One (op, size)'s figures for one rank (rank 0 gets the combined ones).
struct Row {
  Op op = Op::kAllReduce;
  comm::Algorithm algorithm = comm::Algorithm::kAuto;  // what ran
  int64_t bytes = 0;
  double us = 0;  // mean over ranks of each rank's mean time per call
  int64_t iters = 0;
  int64_t errors = 0;  // summed over ranks
};

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kAllReduce: return "allreduce";
    case Op::kAllGather: return "allgather";
    case Op::kReduceScatter: return "reducescatter";
    case Op::kBroadcast: return "broadcast";
    case Op::kAllToAll: return "alltoall";
  }
  return "?";
}

double bus_factor(Op op, int n) {
  switch (op) {
    case Op::kAllReduce: return 2.0 * (n - 1) / n;
    case Op::kBroadcast: return 1.0;
    default: return static_cast<double>(n - 1) / n;
  }
}

// "4K", "64K", "1M", "16M", "1G" (binary units) or a plain byte count.
int64_t parse_size(const std::string& s) {
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(s, &end);
  } catch (const std::exception&) {
    throw CLI::ValidationError("--sizes", "cannot read size '" + s + "'");
  }
  std::string unit = s.substr(end);
  if (unit == "K" || unit == "k") v *= 1024.0;
  else if (unit == "M" || unit == "m") v *= 1024.0 * 1024.0;
  else if (unit == "G" || unit == "g") v *= 1024.0 * 1024.0 * 1024.0;
  else if (!unit.empty()) throw CLI::ValidationError("--sizes", "unknown unit in size '" + s + "'");
  if (v < 4) throw CLI::ValidationError("--sizes", "size '" + s + "' is below one f32 element");
  return static_cast<int64_t>(v);
}

// Input element i of rank r: a small integer, so sums are exact in f32.
float input_value(int r, int64_t i) { return static_cast<float>((r + 1) * 16 + i % 13); }

// The tensors and call of one op at one size, as seen from group rank `me` of `n`.
class Case {
 public:
  Case(Op op, int64_t count, const comm::Group& group, comm::Algorithm algo)
      : op_(op), count_(count), group_(group), algo_(algo) {
    const int64_t in_count = op == Op::kAllGather ? count / group.size() : count;
    input_ = Tensor({in_count});
    float* p = input_.f32();
    for (int64_t i = 0; i < in_count; ++i) p[i] = input_value(group.rank(), i);
  }

  // One collective; keeps its result for check().
  void call() {
    switch (op_) {
      case Op::kAllReduce: out_ = comm::all_reduce(input_, {.group = group_, .algorithm = algo_}); break;
      case Op::kAllGather: out_ = comm::all_gather(input_, {.group = group_, .algorithm = algo_}); break;
      case Op::kReduceScatter: out_ = comm::reduce_scatter(input_, {.group = group_, .algorithm = algo_}); break;
      case Op::kBroadcast: out_ = comm::broadcast(input_, {.group = group_, .root = 0, .algorithm = algo_}); break;
      case Op::kAllToAll:
        out_ = comm::all_to_all(input_, {.group = group_, .split_count = group_.size(), .algorithm = algo_});
        break;
    }
  }

  // Wrong elements of the last result (a wrong element count counts every expected one).
  int64_t check() const {
    const int me = group_.rank(), n = group_.size();
    const int64_t k = count_ / n;  // block length
    const int64_t want_count = op_ == Op::kReduceScatter ? k : count_;
    if (!out_.defined() || out_.numel() != want_count || out_.dtype() != sf::DType::kF32) return want_count;
    const float* o = out_.f32();
    const float base_sum = 16.0f * static_cast<float>(n * (n + 1) / 2);
    int64_t bad = 0;
    for (int64_t i = 0; i < want_count; ++i) {
      float want = 0;
      switch (op_) {
        case Op::kAllReduce: want = base_sum + static_cast<float>(n * (i % 13)); break;
        case Op::kReduceScatter: want = base_sum + static_cast<float>(n * ((me * k + i) % 13)); break;
        case Op::kAllGather: want = input_value(static_cast<int>(i / k), i % k); break;
        case Op::kBroadcast: want = input_value(0, i); break;
        case Op::kAllToAll: want = input_value(static_cast<int>(i / k), me * k + i % k); break;
      }
      bad += o[i] != want;
    }
    return bad;
  }

  void drop_output() { out_ = Tensor(); }

  // The algorithm a call runs: the forced one, or the table's for this input.
  comm::Algorithm algorithm() const {
    if (algo_ != comm::Algorithm::kAuto) return algo_;
    const comm::Collective c = collective();
    const int64_t count = op_ == Op::kAllGather ? input_.numel() * group_.size() : input_.numel();
    return comm::choose_algorithm(c, static_cast<int64_t>(input_.nbytes()), group_.size(),
                                  comm::transport_caps(group_.transport(), c, count));
  }

 private:
  comm::Collective collective() const {
    switch (op_) {
      case Op::kAllReduce: return comm::Collective::kAllReduce;
      case Op::kAllGather: return comm::Collective::kAllGather;
      case Op::kReduceScatter: return comm::Collective::kReduceScatter;
      case Op::kBroadcast: return comm::Collective::kBroadcast;
      case Op::kAllToAll: return comm::Collective::kAllToAll;
    }
    return comm::Collective::kBarrier;
  }

  Op op_;
  int64_t count_;
  comm::Group group_;
  comm::Algorithm algo_;
  Tensor input_;
  Tensor out_;
};

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    if (comma > pos) out.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Runs one op at every size on this rank; appends the rows (combined over ranks on group
// rank 0).
void run_op(const Config& cfg, Op op, const comm::Group& group, std::vector<Row>& rows) {
  const int n = group.size();
  for (int64_t size : cfg.sizes) {
    const int64_t count = size / 4 / n * n;
    Row row{.op = op, .bytes = count * 4};
    if (count == 0) throw sf::InvalidArgument(fmt::format("size {} B holds fewer than {} f32 elements", size, n));
    Case c(op, count, group, cfg.algorithm);
    row.algorithm = c.algorithm();
    comm::barrier({.group = group});

    // Warm-up, timed as the measurement, to calibrate the iteration count.
    const int warm = cfg.warmup > 0 ? cfg.warmup : (row.bytes >= (int64_t{8} << 20) ? 3 : 10);
    double warm_s = 0;
    for (int w = 0; w < warm; ++w) {
      auto t0 = Clock::now();
      c.call();
      auto t1 = Clock::now();
      if (w > 0 || warm == 1) warm_s += seconds(t1 - t0);  // the first call pays first touches
      comm::barrier({.group = group});
    }
    // Measurement: each call timed alone, an untimed barrier after it. The first chunk of
    // calls is sized from the slowest rank's warm-up time; after each chunk the ranks agree
    // (untimed, on the slowest rank's total) whether the budget is spent, and size the next.
    auto slowest = [&](double v) {
      Tensor t = Tensor::full({1}, static_cast<float>(v));
      return static_cast<double>(comm::all_reduce(t, {.group = group, .op = comm::ReduceOp::kMax}).f32()[0]);
    };
    const double per_call = std::max(slowest(warm_s / std::max(1, warm - 1)), 1e-7);
    int64_t chunk = std::clamp(static_cast<int64_t>(cfg.budget / per_call), cfg.min_iters, cfg.max_iters);
    double acc = 0;
    for (;;) {
      for (int64_t it = 0; it < chunk; ++it) {
        auto t0 = Clock::now();
        c.call();
        auto t1 = Clock::now();
        acc += seconds(t1 - t0);
        comm::barrier({.group = group});
      }
      row.iters += chunk;
      const double spent = slowest(acc);
      if (spent >= cfg.budget || row.iters >= cfg.max_iters) break;
      const double left = (cfg.budget - spent) / (spent / static_cast<double>(row.iters));
      chunk = std::clamp(static_cast<int64_t>(left) + 1, int64_t{1}, cfg.max_iters - row.iters);
    }
    const double mean_us = acc / static_cast<double>(row.iters) * 1e6;
    const int64_t bad = c.check();
    c.drop_output();

    // Combine over ranks (untimed): mean of the per-rank means, sum of the errors.
    Tensor t = Tensor::full({1}, static_cast<float>(mean_us));
    Tensor all = comm::all_gather(t, {.group = group});
    Tensor e({1}, sf::DType::kI32);
    e.i32()[0] = static_cast<int32_t>(std::min<int64_t>(bad, INT32_MAX / n));
    row.errors = comm::all_reduce(e, {.group = group}).i32()[0];
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += all.f32()[r];
    row.us = sum / n;
    rows.push_back(row);
  }
}

std::vector<Row> run_rank(const Config& cfg, const comm::Group& group) {
  std::vector<Row> rows;
  for (Op op : cfg.ops) run_op(cfg, op, group, rows);
  return rows;
}

void print(const Config& cfg, int n, const std::vector<Row>& rows) {
  std::string out = "HEADER,transport,ranks,op,bytes,us,algbw_GBs,busbw_GBs,iters,errors,algorithm\n";
  for (const Row& r : rows) {
    const double algbw = static_cast<double>(r.bytes) / (r.us * 1e-6) / 1e9;
    out += fmt::format("RESULT,{},{},{},{},{:.3f},{:.4f},{:.4f},{},{},{}\n", cfg.transport, n, op_name(r.op), r.bytes,
                       r.us, algbw, algbw * bus_factor(r.op, n), r.iters, r.errors, comm::algorithm_name(r.algorithm));
  }
  std::fputs(out.c_str(), stdout);
  std::fflush(stdout);
}

// Ranks as threads of this process, one per endpoint of `world`.
int run_threads(const Config& cfg, const std::vector<std::shared_ptr<comm::Transport>>& world) {
  std::vector<std::exception_ptr> errors(cfg.ranks);
  std::vector<Row> rows;
  std::vector<std::thread> threads;
  for (int r = 0; r < cfg.ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        auto got = run_rank(cfg, comm::world_group(world[r]));
        if (r == 0) rows = std::move(got);
      } catch (...) {
        errors[r] = std::current_exception();
        world[r]->close();  // peers fail fast with PeerLost instead of waiting for the timeout
      }
    });
  for (auto& t : threads) t.join();
  int rc = 0;
  for (int r = 0; r < cfg.ranks; ++r)
    if (errors[r]) {
      try {
        std::rethrow_exception(errors[r]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "sfbench_comm: rank %d: %s\n", r, e.what());
      }
      rc = 1;
    }
  if (rc == 0) print(cfg, cfg.ranks, rows);
  return rc;
}

// One rank per process: `world` is this process's endpoint of an mpirun job or of a zmq job
// joined through sfrun's variables.
int run_process(const Config& cfg, const std::shared_ptr<comm::Transport>& world, bool ranks_given) {
  const int me = world->rank(), n = world->size();
  try {
    if (ranks_given && cfg.ranks != n)
      throw sf::InvalidArgument(fmt::format("--ranks {} but the job has {} ranks", cfg.ranks, n));
    auto rows = run_rank(cfg, comm::world_group(world));
    if (me == 0) print(cfg, n, rows);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sfbench_comm: rank %d: %s\n", me, e.what());
    world->close();
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  std::string sizes = "4K,64K,1M,16M,64M";
  std::string ops = "allreduce";
  std::string algorithm = "auto";
  std::string zmq_scheme = "tcp";
  CLI::App app{"shardflow comm collective benchmark (OSU-style)"};
  app.add_option("--transport", cfg.transport, "inproc or zmq (threads of this process), mpi (under mpirun)")
      ->check(CLI::IsMember({"inproc", "zmq", "mpi"}));
  app.add_option("--zmq-scheme", zmq_scheme, "zmq sockets: tcp (127.0.0.1) or ipc")->check(CLI::IsMember({"tcp", "ipc"}));
  app.add_option("--ranks", cfg.ranks, "virtual ranks for inproc (mpi: must match mpirun -np if given)")
      ->check(sf::cli::kPositive);
  app.add_option("--op", ops, "allreduce, allgather, reducescatter, broadcast, alltoall: one, a comma list or all");
  app.add_option("--algorithm", algorithm, "force an algorithm (comm/algorithm.h names) instead of the table's")
      ->check(CLI::IsMember({"auto", "ring", "recursive_doubling", "binomial_tree", "pairwise", "native", "by_reference"}));
  app.add_option("--sizes", sizes, "comma-separated byte sizes, K/M/G = KiB/MiB/GiB");
  app.add_option("--budget", cfg.budget, "seconds of timed calls per size (approximately)")
      ->check(sf::cli::kPositive);
  app.add_option("--warmup", cfg.warmup, "warm-up calls per size (0: 10 below 8 MiB, else 3)")
      ->check(sf::cli::kNonNegative);
  app.add_option("--min-iters", cfg.min_iters)->check(sf::cli::kPositive);
  app.add_option("--max-iters", cfg.max_iters)->check(sf::cli::kPositive);
  CLI11_PARSE(app, argc, argv);
  try {
    constexpr Op kAll[] = {Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kBroadcast, Op::kAllToAll};
    for (const std::string& name : split(ops == "all" ? "allreduce,allgather,reducescatter,broadcast,alltoall" : ops)) {
      const Op* o = std::find_if(std::begin(kAll), std::end(kAll), [&](Op k) { return op_name(k) == name; });
      if (o == std::end(kAll)) throw CLI::ValidationError("--op", "unknown op '" + name + "'");
      cfg.ops.push_back(*o);
    }
    for (const std::string& s : split(sizes)) cfg.sizes.push_back(parse_size(s));
    if (cfg.sizes.empty()) throw CLI::ValidationError("--sizes", "no size given");
    if (cfg.ops.empty()) throw CLI::ValidationError("--op", "no op given");
    for (comm::Algorithm a : {comm::Algorithm::kAuto, comm::Algorithm::kRing, comm::Algorithm::kRecursiveDoubling,
                              comm::Algorithm::kBinomialTree, comm::Algorithm::kPairwise, comm::Algorithm::kNative,
                              comm::Algorithm::kByReference})
      if (comm::algorithm_name(a) == algorithm) cfg.algorithm = a;
    cfg.max_iters = std::max(cfg.max_iters, cfg.min_iters);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }
  try {
    const bool ranks_given = app.count("--ranks") > 0;
    if (cfg.transport == "mpi") return run_process(cfg, comm::make_mpi_world(), ranks_given);
    if (cfg.transport == "zmq" && std::getenv("SF_RANK"))
      return run_process(cfg, comm::make_zmq_world(comm::zmq_join_from_env()), ranks_given);
    if (cfg.transport == "zmq") {
      comm::ZmqOptions o;
      o.scheme = zmq_scheme == "ipc" ? comm::ZmqScheme::kIpc : comm::ZmqScheme::kTcp;
      return run_threads(cfg, comm::make_zmq_world(cfg.ranks, o));
    }
    return run_threads(cfg, comm::make_inproc_world(cfg.ranks));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sfbench_comm: %s\n", e.what());
    return 1;
  }
}
