// Sequence parallel's activation memory, measured: the GPT decoder (shardflow/models/gpt.h)
// trains a few steps on T virtual ranks, once with tensor parallel only and once with sequence
// parallel too, and a tracking allocator (core/memory_meter.h, actors/node_meters.h) charges
// every tensor the LayerNorm, dropout and residual regions allocate on a rank to that rank's
// meter. The goal: SP's peak per rank <= 1/T of the TP-only run's.
//
//   ./build/bench/gpt_memory [--tp 2,4] [--layers 2 --hidden 256 --heads 8 --seq 128 --batch 8]
//                            [--steps 3] [--nodes]
//
// The region: every op node (forward and gradient) whose name contains "/ln1/", "/ln2/", "/lnf/",
// "/drop", "/res", "/pos/", "proj_bias" or "fc2_bias": the ops sequence parallel splits on the
// sequence. Not in it: the redistributions at its edges (the AllGather into a projection and the
// ReduceScatter or AllReduce out of one are named for the projection), which belong to the
// tensor-parallel regions. A region node whose output is 3-D, (batch, seq, hidden), is an
// activation; the others are gradients of the region's parameters (LayerNorm gamma and beta, the
// biases: (hidden); the position table: (seq, hidden)), counted apart, since they are not
// activations. What a node is charged: its output registers, allocated when its actor spawns,
// and whatever its kernel allocates while it runs; the peak is the most that was live at once.
// "Nodes in both" compares only the activation nodes both runs have: TP-only sums the q, k and v
// input gradients at ln1's output ("ln1/LayerNorm/Accumulate-*"), SP sums them on the gathered
// sequence before its ReduceScatter, which is the projection's redistribution, not the region.
//
// The boundary, measured apart and not part of the goal: the nodes named "/in0/" or "/out/", the
// redistributions the planner inserts into and out of the projections, forward and backward
// (SP's StridedSlice/Concat around each AllGather and ReduceScatter, and the gradients of both).
// A collective's own result is made by comm on the group's thread and charged to no meter, in
// either run (actors/node_meters.h). --nodes lists rank 0's metered nodes with their class,
// output shape and peak bytes in both runs.
//
// One T per process (the comm layer is set up once per process): with several --tp values the
// bench runs itself once per value. Dropout 0.1 (the dropout ops exist), AdamW, the fortune
// windows in file order. Prints a markdown table per T, then "RESULT,..." lines after a
// "HEADER,..." line.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/actors/node_meters.h>
#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/core/cli_checks.h>
#include <shardflow/core/memory_meter.h>
#include <shardflow/data/text_corpus.h>
#include <shardflow/models/gpt.h>
#include <shardflow/models/gpt_data.h>
#include <shardflow/shardflow.h>

extern char** environ;

namespace {

namespace ds = sf::dataset;

struct Options {
  sf::models::GptConfig model{.layers = 2, .hidden = 256, .heads = 8, .seq = 128};
  int64_t batch = 8;
  int64_t steps = 3;
  std::vector<int> tps{2, 4};
  bool nodes = false;
  std::string text_dir = ds::kFortunesDir;
};

constexpr std::array<const char*, 8> kRegion = {"/ln1/", "/ln2/", "/lnf/", "/drop", "/res", "/pos/", "proj_bias",
                                                "fc2_bias"};

bool in_region(const std::string& name) {
  return std::any_of(kRegion.begin(), kRegion.end(), [&](const char* p) { return name.find(p) != std::string::npos; });
}

// The planner's redistributions at a projection's input or output, forward and backward.
bool at_boundary(const std::string& name) {
  return name.find("/in0/") != std::string::npos || name.find("/out/") != std::string::npos;
}

enum class Kind { kActivation, kParamGrad, kBoundary };

const char* kind_name(Kind k) {
  return k == Kind::kActivation ? "activation" : k == Kind::kParamGrad ? "param grad" : "boundary";
}

// One region node's measurement on one rank.
struct NodeBytes {
  Kind kind = Kind::kActivation;
  sf::Shape shape;
  std::shared_ptr<sf::MemoryMeter> meter;
};

// One rank's measurement of one run: a meter per region node, under a meter for the activations
// or one for the parameter gradients, under one for the region (see the file comment); and the
// boundary's nodes under a meter of their own.
struct RankBytes {
  std::shared_ptr<sf::MemoryMeter> region = std::make_shared<sf::MemoryMeter>();
  std::shared_ptr<sf::MemoryMeter> activations = std::make_shared<sf::MemoryMeter>(region);
  std::shared_ptr<sf::MemoryMeter> param_grads = std::make_shared<sf::MemoryMeter>(region);
  std::shared_ptr<sf::MemoryMeter> boundary = std::make_shared<sf::MemoryMeter>();
  std::map<std::string, NodeBytes> nodes;
  int count(Kind kind) const {
    return static_cast<int>(
        std::count_if(nodes.begin(), nodes.end(), [&](const auto& kv) { return kv.second.kind == kind; }));
  }
};

// Trains on every rank of the world with (dp 1, tp T, sp) and returns each rank's region peaks.
std::vector<RankBytes> measure(const Options& o, const ds::Dataset& set, int tp, bool sp) {
  std::vector<RankBytes> out(static_cast<size_t>(tp));
  sf::comm::run_ranks([&] {
    const int rank = sf::comm::get_rank();
    RankBytes& mine = out[static_cast<size_t>(rank)];
    {
      // Asked on this rank's thread as its runtime is built, once per node.
      const sf::NodeMeterScope scope([&](const sf::Node& n) -> std::shared_ptr<sf::MemoryMeter> {
        const bool region = in_region(n.name);
        if (!region && !at_boundary(n.name)) return nullptr;
        NodeBytes& b = mine.nodes[n.name];
        b.kind = !region ? Kind::kBoundary : n.shape.size() == 3 ? Kind::kActivation : Kind::kParamGrad;
        b.shape = n.shape;
        b.meter = std::make_shared<sf::MemoryMeter>(b.kind == Kind::kBoundary    ? mine.boundary
                                                    : b.kind == Kind::kActivation ? mine.activations
                                                                                  : mine.param_grads);
        return b.meter;
      });
      sf::models::Gpt net(o.model);
      net.shard({.dp = 1, .tp = tp, .sp = sp});
      auto opt = std::make_shared<sf::nn::AdamW>(net.trainable_params(), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                                                 sf::nn::decay_except_vectors);
      sf::Model model(net, std::make_shared<sf::models::GptLoss>(net), opt);
      model.train(1, set, {});
    }
    // The model is gone: every byte charged must have been released, or the meter missed a free.
    SF_ENFORCE(mine.region->live_bytes() == 0 && mine.boundary->live_bytes() == 0, Error,
               "gpt_memory: rank {} still holds {} metered bytes after the model's end", rank,
               mine.region->live_bytes() + mine.boundary->live_bytes());
    SF_ENFORCE(mine.count(Kind::kActivation) > 0, Error, "gpt_memory: rank {} metered no region node", rank);
  });
  return out;
}

std::string mib(size_t bytes) { return fmt::format("{:.3f}", static_cast<double>(bytes) / (1 << 20)); }

int run_one(const Options& o, int tp) {
  const ds::TextCorpus corpus = ds::TextCorpus::read(o.text_dir);
  Options c = o;
  c.model.vocab = static_cast<int64_t>(corpus.vocab().size());
  c.model.check();
  sf::models::GptParallel{.dp = 1, .tp = tp, .sp = true}.check(c.model);
  const ds::Dataset set =
      sf::models::gpt_windows(corpus, ds::TextSplit::kTrain, c.model.seq, c.steps * c.batch).batch(c.batch);

  sf::comm::JobSpec spec;
  spec.source = sf::comm::JobSpec::Source::kDevices;
  spec.backend = "inproc";
  spec.size = tp;
  spec.local_ranks = tp;
  sf::comm::init(spec);
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel});
  sf::set_seed(1);  // process-wide: set before the ranks' threads read it
  const std::vector<RankBytes> tp_only = measure(c, set, tp, false);
  const std::vector<RankBytes> seq_par = measure(c, set, tp, true);
  sf::comm::release();

  const double goal = 1.0 / tp;
  if (c.nodes) {
    fmt::print("\nRank 0's metered nodes: output shape and peak bytes (its registers and its kernel's "
               "allocations)\n\n| node | class | TP-only shape | TP-only bytes | SP shape | SP bytes |\n"
               "|---|---|---|---|---|---|\n");
    std::map<std::string, std::pair<const NodeBytes*, const NodeBytes*>> both;
    for (const auto& [name, b] : tp_only[0].nodes) both[name].first = &b;
    for (const auto& [name, b] : seq_par[0].nodes) both[name].second = &b;
    const auto shape = [](const NodeBytes* n) { return n ? fmt::format("{}", fmt::join(n->shape, "x")) : "-"; };
    const auto bytes = [](const NodeBytes* n) { return n ? std::to_string(n->meter->peak_bytes()) : "-"; };
    for (const auto& [name, pair] : both) {
      const auto [a, b] = pair;
      fmt::print("| {} | {} | {} | {} | {} | {} |\n", name, kind_name((a ? a : b)->kind), shape(a), bytes(a), shape(b),
                 bytes(b));
    }
  }
  fmt::print("\nT = {}: layers {}, hidden {}, heads {}, seq {}, batch {}, {} steps; peak bytes per rank in the "
             "region (MiB = 2^20 bytes)\n\n",
             tp, c.model.layers, c.model.hidden, c.model.heads, c.model.seq, c.batch, c.steps);
  fmt::print("| rank | TP-only activations (nodes) | SP activations (nodes) | SP/TP | goal 1/T | "
             "nodes in both: SP/TP | param grads TP-only | param grads SP | region incl. param grads: SP/TP | "
             "boundary TP-only | boundary SP |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  double worst = 0, worst_matched = 0, worst_all = 0;
  for (int r = 0; r < tp; ++r) {
    const RankBytes &a = tp_only[static_cast<size_t>(r)], &b = seq_par[static_cast<size_t>(r)];
    const auto ratio = [](size_t x, size_t y) { return static_cast<double>(x) / static_cast<double>(y); };
    // The activation nodes both runs have: the sum of their own peaks (each node's registers and
    // kernel allocations), since they are not under a meter of their own.
    size_t matched_a = 0, matched_b = 0;
    for (const auto& [name, nb] : b.nodes) {
      auto it = a.nodes.find(name);
      if (nb.kind != Kind::kActivation || it == a.nodes.end()) continue;
      matched_a += it->second.meter->peak_bytes();
      matched_b += nb.meter->peak_bytes();
    }
    const double act = ratio(b.activations->peak_bytes(), a.activations->peak_bytes());
    const double matched = ratio(matched_b, matched_a);
    const double all = ratio(b.region->peak_bytes(), a.region->peak_bytes());
    worst = std::max(worst, act);
    worst_matched = std::max(worst_matched, matched);
    worst_all = std::max(worst_all, all);
    fmt::print("| {} | {} ({}) | {} ({}) | {:.4f} | {:.4f} | {:.4f} | {} | {} | {:.4f} | {} ({}) | {} ({}) |\n", r,
               mib(a.activations->peak_bytes()), a.count(Kind::kActivation), mib(b.activations->peak_bytes()),
               b.count(Kind::kActivation), act, goal, matched, mib(a.param_grads->peak_bytes()),
               mib(b.param_grads->peak_bytes()), all, mib(a.boundary->peak_bytes()), a.count(Kind::kBoundary),
               mib(b.boundary->peak_bytes()), b.count(Kind::kBoundary));
  }
  const bool holds = worst <= goal + 1e-12;
  fmt::print("\nHEADER,what,tp,layers,hidden,heads,seq,batch,steps,tp_only_bytes_rank0,sp_bytes_rank0,worst_ratio,goal,"
             "holds,worst_ratio_nodes_in_both,worst_ratio_with_param_grads,boundary_tp_only_bytes_rank0,"
             "boundary_sp_bytes_rank0\n");
  fmt::print("RESULT,gpt_sp_activation_bytes,{},{},{},{},{},{},{},{},{},{:.6f},{:.6f},{},{:.6f},{:.6f},{},{}\n", tp,
             c.model.layers, c.model.hidden, c.model.heads, c.model.seq, c.batch, c.steps,
             tp_only[0].activations->peak_bytes(), seq_par[0].activations->peak_bytes(), worst, goal,
             holds ? "yes" : "no", worst_matched, worst_all, tp_only[0].boundary->peak_bytes(),
             seq_par[0].boundary->peak_bytes());
  std::fflush(stdout);
  return 0;
}

// Runs this program once per T with the same options: the comm layer is set up once per process.
int run_each(const Options& o) {
  for (int tp : o.tps) {
    std::vector<std::string> args{"/proc/self/exe",  "--tp",     std::to_string(tp),
                                  "--layers",        std::to_string(o.model.layers),
                                  "--hidden",        std::to_string(o.model.hidden),
                                  "--heads",         std::to_string(o.model.heads),
                                  "--seq",           std::to_string(o.model.seq),
                                  "--batch",         std::to_string(o.batch),
                                  "--steps",         std::to_string(o.steps),
                                  "--text-dir",      o.text_dir};
    if (o.nodes) args.emplace_back("--nodes");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    pid_t pid = 0;
    SF_ENFORCE(::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) == 0, IoError,
               "gpt_memory: cannot start the run for --tp {}", tp);
    int status = 0;
    SF_ENFORCE(::waitpid(pid, &status, 0) == pid, IoError, "gpt_memory: lost the run for --tp {}", tp);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Sequence parallel's activation bytes per rank in the LayerNorm/dropout/residual regions, measured"};
  app.add_option("--tp", o.tps, "tensor-parallel degrees T, one run each (comma-separated)")
      ->delimiter(',')
      ->check(CLI::Range(2, 1 << 16));
  app.add_option("--layers", o.model.layers)->check(sf::cli::kPositive);
  app.add_option("--hidden", o.model.hidden)->check(sf::cli::kPositive);
  app.add_option("--heads", o.model.heads)->check(sf::cli::kPositive);
  app.add_option("--seq", o.model.seq)->check(sf::cli::kPositive);
  app.add_option("--batch", o.batch, "global batch (every rank is fed all of it: dp 1)")->check(sf::cli::kPositive);
  app.add_option("--steps", o.steps, "training steps of each run")->check(sf::cli::kPositive);
  app.add_flag("--nodes", o.nodes, "list rank 0's region nodes, their class and output shape");
  app.add_option("--text-dir", o.text_dir, "the fortune files");
  CLI11_PARSE(app, argc, argv);
  try {
    return o.tps.size() == 1 ? run_one(o, o.tps[0]) : run_each(o);
  } catch (const sf::Error& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
