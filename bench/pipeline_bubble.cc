// Bubble and memory of the pipeline schedules, measured against theory: p stages × m
// micro-batches of a network whose stages do equal work (each stage `--layers` Dense layers of
// `--width`, no bias, ReLU; the first stage starts with a small Dense from 16 features, so that
// its wide layers compute input gradients as every other stage's do, and the last ends with a
// small classifier), trained with Model on virtual
// devices (one thread per stage). For each schedule it prints the theoretical bubble fraction,
// the simulator's, and the measured one (the median over `--steps` timed steps of the idle share
// of p × makespan read off the stage actors' clocks), with each stage's peak stashed
// micro-batches (measured from the run's order, and the theory's), the most bytes the stage's
// stashed values held at once, and the share of the stages' send and receive time that ran while
// they computed (transfers run on their own actors, posted ahead).
//
//   ./build/bench/pipeline_bubble                          # p=4, m=8, every schedule
//   ./build/bench/pipeline_bubble --timeline-dir out/      # also out/<schedule>.timeline.json (sfviz show)
//   ./build/bench/pipeline_bubble --stages 2 --tp 2        # each stage's layers cut over 2 devices
//   ./build/tools/sfrun/sfrun -n 4 -- ./build/bench/pipeline_bubble --stages 2 --tp 2   # one process per device
//
// --tp T cuts each stage's wide layers over T devices, Megatron's way: the first of each pair
// column-parallel (its weight split by output features), the second row-parallel (by input
// features; the partial sums are AllReduced inside the stage). The job has stages x T devices:
// virtual ones in this process, or the processes sfrun or mpirun started.
//
// Theory (F = B = W for ZB-H1, B = 2F otherwise, as the network's GEMMs make them):
//   GPipe, 1F1B       (p-1)/(m+p-1)
//   interleaved 1F1B  (p-1)/(v·m+p-1)
//   ZB-H1             (p-1)/(3m+p-1) — about (p-1)/(3m) for m >> p
// Stash: GPipe m on every stage; 1F1B and ZB-H1 p - s on stage s.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fmt/format.h>
#include <iostream>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/bootstrap/job_spec.h>
#include <shardflow/pipeline/simulator.h>
#include <shardflow/pipeline/timeline_json.h>
#include <shardflow/pipeline/timeline_stats.h>
#include <shardflow/shardflow.h>

namespace {

constexpr int64_t kInputFeatures = 16;

struct Options {
  int stages = 4, micro = 8, chunks = 2, layers = 2, steps = 7, warmup = 2, tp = 1;
  int64_t width = 512, rows = 64;
  std::vector<std::string> schedules{"gpipe", "1f1b", "interleaved_1f1b", "zb_h1"};
  std::string timeline_dir;
};

double theory(const std::string& s, int p, int m, int v) {
  if (s == "interleaved_1f1b") return (p - 1.0) / (v * m + p - 1.0);
  if (s == "zb_h1") return (p - 1.0) / (3.0 * m + p - 1.0);
  return (p - 1.0) / (m + p - 1.0);
}

int theory_stash(const std::string& s, int p, int m, int stage) { return s == "gpipe" ? m : p - stage; }

// A wide layer, x W then ReLU, as Primitives so that shard() can cut them: column-parallel
// (W by its output features, the result split by feature) or row-parallel (W by its input
// features, a partial sum the planner reduces) over `tp` devices.
class WideLayer : public sf::nn::Cell {
 public:
  WideLayer(int64_t width, int64_t tp, bool column) {
    w_ = &register_parameter("w", {width, width}, "he_uniform");
    if (tp == 1) return;
    if (column) {
      matmul.shard({{1, 1}, {1, tp}});
      relu.shard({{1, tp}});
    } else {
      matmul.shard({{1, tp}, {tp, 1}});
      relu.shard({{1, 1}});
    }
  }
  sf::Value construct(sf::GraphBuilder& b, sf::Value x) override { return relu(b, {matmul(b, {x, param(b, *w_)})}); }
  sf::Primitive& matmul = register_primitive("matmul", "MatMul");
  sf::Primitive& relu = register_primitive("relu", "ReLU");

 private:
  sf::Parameter* w_ = nullptr;
};

std::shared_ptr<sf::nn::SequentialCell> balanced_net(const Options& o, int virtual_stages) {
  std::vector<sf::nn::CellPtr> blocks;
  for (int k = 0; k < virtual_stages; ++k) {
    std::vector<sf::nn::CellPtr> layers;
    if (k == 0) layers.push_back(std::make_shared<sf::nn::Dense>(kInputFeatures, o.width, "dense_weight", "zeros", false));
    for (int l = 0; l < o.layers; ++l) layers.push_back(std::make_shared<WideLayer>(o.width, o.tp, l % 2 == 0));
    if (k == virtual_stages - 1) layers.push_back(std::make_shared<sf::nn::Dense>(o.width, 10));
    auto block = std::make_shared<sf::nn::SequentialCell>(layers);
    block->set_pipeline_stage(k);
    blocks.push_back(block);
  }
  return std::make_shared<sf::nn::SequentialCell>(blocks);
}

sf::dataset::Dataset rows(int64_t n) {
  return sf::dataset::Dataset::generator(
      [w = kInputFeatures](int64_t i) {
        sf::Tensor x({w});
        for (int64_t k = 0; k < w; ++k) x.f32()[k] = sf::normal_at(1, 0, static_cast<uint64_t>(i * w + k));
        return std::vector<sf::Tensor>{x, sf::Tensor::from_vector({}, std::vector<int32_t>{static_cast<int32_t>(i % 10)})};
      },
      n, {"x", "label"});
}

// Keeps the measured timeline and this rank's memory peak of every step.
struct Timelines : sf::Callback {
  sf::Model* model = nullptr;
  std::vector<sf::pipeline::Timeline> steps;
  std::vector<size_t> bytes;
  void on_step_end(const sf::RunContext&) override {
    steps.push_back(model->pipeline_step()->runtime()->last_timeline());
    bytes.push_back(model->pipeline_step()->last().peak_stashed_bytes);
  }
};

void run(const Options& o, const std::string& schedule) {
  const int v = schedule == "interleaved_1f1b" ? o.chunks : 1;
  sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel,
                                 .gradients_mean = true,
                                 .dataset_strategy = "full_batch",
                                 .pipeline_stages = o.stages,
                                 .pipeline_scheduler = schedule,
                                 .pipeline_interleave = v});
  const int64_t batch = o.rows * o.micro;
  sf::comm::run_ranks([&] {
    sf::set_seed(0);
    auto net = balanced_net(o, o.stages * v);
    sf::nn::PipelineCell pipe(sf::nn::WithLossCell(*net, sf::nn::CrossEntropyLoss()), o.micro);
    sf::Model model(pipe, sf::nn::SGD(net->infer_param_pipeline_stage(), 1e-3f), {.trace = true});
    auto log = std::make_shared<Timelines>();
    log->model = &model;
    model.train(1, rows(batch * (o.warmup + o.steps)).batch(batch), {log});

    // Every rank's memory peak over the timed steps, in KiB, to rank 0.
    size_t peak = 0;
    for (size_t i = o.warmup; i < log->bytes.size(); ++i) peak = std::max(peak, log->bytes[i]);
    sf::Tensor mine = sf::Tensor::from_vector({1}, std::vector<int32_t>{static_cast<int32_t>(peak / 1024)});
    const sf::Tensor all = sf::comm::all_gather(mine, {});
    if (sf::comm::get_rank() != 0) return;

    std::vector<std::pair<double, size_t>> bubbles;
    for (size_t i = o.warmup; i < log->steps.size(); ++i)
      bubbles.emplace_back(sf::pipeline::timeline_stats(log->steps[i]).bubble_fraction, i);
    std::sort(bubbles.begin(), bubbles.end());
    const auto [measured, median_step] = bubbles[bubbles.size() / 2];
    const sf::pipeline::Timeline& t = log->steps[median_step];
    const auto stats = sf::pipeline::timeline_stats(t);
    const auto planned = sf::pipeline::make_schedule(sf::pipeline::schedule_kind(schedule), o.stages, o.micro, v);
    const auto sim = sf::pipeline::simulate_schedule(planned, sf::pipeline::splits_backward(planned)
                                                                  ? sf::pipeline::ActionCosts{1, 1, 1}
                                                                  : sf::pipeline::ActionCosts{1, 2, 1});
    const double th = theory(schedule, o.stages, o.micro, v);
    std::string stash, stash_theory, kib;
    for (int s = 0; s < o.stages; ++s) {
      stash += fmt::format("{}{}", s ? "/" : "", stats.stages[s].peak_stashed);
      stash_theory += fmt::format("{}{}", s ? "/" : "", v == 1 ? std::to_string(theory_stash(schedule, o.stages, o.micro, s)) : "-");
      kib += fmt::format("{}{}", s ? "/" : "", all.i32()[s * o.tp]);  // each stage's first rank
    }
    fmt::print("| {} | {} | {} | {} | {} | {:.3f} | {:.3f} | {:.3f} | {:+.1f}% | {:.1f} | {} | {} | {} | {:.2f} |\n",
               schedule, o.stages, o.tp, o.micro, v, th, sim.bubble_fraction, measured, 100.0 * (measured - th) / th,
               stats.makespan / 1000.0, stash, stash_theory, kib, stats.hidden_transfer_share);
    if (!o.timeline_dir.empty())
      sf::pipeline::write_timeline_file(fmt::format("{}/{}.timeline.json", o.timeline_dir, schedule), t);
  });
}

}  // namespace

int bench_main(int argc, char** argv) {
  Options o;
  CLI::App app{"Pipeline bubble and stash per schedule, measured against theory"};
  app.add_option("--stages", o.stages, "pipeline stages p (one virtual device each)");
  app.add_option("--micro-batches", o.micro, "micro-batches m");
  app.add_option("--chunks", o.chunks, "model chunks v for interleaved_1f1b");
  app.add_option("--layers", o.layers, "Dense layers per (virtual) stage");
  app.add_option("--width", o.width, "features of every layer");
  app.add_option("--rows", o.rows, "rows per micro-batch");
  app.add_option("--steps", o.steps, "timed steps (the median is reported)");
  app.add_option("--warmup", o.warmup, "untimed first steps");
  app.add_option("--schedules", o.schedules, "schedules to run");
  app.add_option("--tp", o.tp, "devices per stage its wide layers are cut over (column- then row-parallel)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeline-dir", o.timeline_dir, "write each schedule's median measured timeline here");
  // The comm layer's arguments (--comm-timeout from sfrun, --devices, ...) go to init().
  std::vector<std::string> comm_args = sf::comm::consume_comm_args(argc, argv);
  CLI11_PARSE(app, argc, argv);
  if (o.tp > 1 && o.layers % 2 != 0) {
    std::cerr << "error: --tp needs an even --layers (column- and row-parallel layers in pairs)\n";
    return 2;
  }
  // Virtual devices in this process, unless a launcher (sfrun, mpirun) started one process each.
  // Every rank checks the size before it joins, so a wrong one stops them all at once.
  const sf::comm::JobSpec job = sf::comm::resolve_job(comm_args, sf::comm::process_env());
  const int size = job.source == sf::comm::JobSpec::Source::kSingle ? o.stages * o.tp : job.size;
  if (job.source == sf::comm::JobSpec::Source::kSingle) comm_args.push_back(fmt::format("--devices={}", size));
  if (size != o.stages * o.tp) {
    std::cerr << fmt::format("error: --stages {} x --tp {} needs {} ranks; the job has {}\n", o.stages, o.tp,
                             o.stages * o.tp, size);
    return 2;
  }
  std::vector<char*> args{argv[0]};
  for (std::string& c : comm_args) args.push_back(c.data());
  int n = static_cast<int>(args.size());
  sf::comm::init(n, args.data());
  if (sf::comm::job().rank == 0) {
    fmt::print("| schedule | p | tp | m | v | theory bubble | simulated | measured | vs theory | step ms | peak stash per stage | theory | peak stash KiB per stage | transfer hidden |\n");
    fmt::print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  }
  for (const std::string& s : o.schedules) run(o, s);
  sf::comm::release();
  return 0;
}

int main(int argc, char** argv) {
  try {
    return bench_main(argc, argv);
  } catch (const std::exception& e) {  // one line, not a terminate: a peer lost, a bad option
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
