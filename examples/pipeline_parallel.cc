// Seed 003, pipeline parallel: a ResNet (examples/seed003_net.h) trained on Fashion-MNIST over
// pipeline stages, the batch cut into micro-batches (PipelineCell), Momentum on each stage's own
// parameters (infer_param_pipeline_stage), loss lines as the seed's LossMonitor prints them.
//
//   ./pipeline_parallel --devices 2                        # 2 stages (the seed's split), 1F1B
//   ./pipeline_parallel --devices 4 --stages 4 --micro-batches 4 --schedule gpipe
//   ./pipeline_parallel --devices 3 --stages 3 --micro-batches 6 --batch 24 --schedule interleaved_1f1b --interleave 2
//   ./pipeline_parallel --devices 8 --stages 2             # 2 stages x 4-way data parallel
//   ./pipeline_parallel --devices 8 --stages 2 --dp 2 --tp 2   # 2 stages x (2-way data x 2-way tensor parallel)
//   ./pipeline_parallel --devices 4 --stages 4 --timeline run.json && sfviz show run.json --plan --html run.html
//   mpirun -np 2 ./pipeline_parallel                       # one process per stage
//   ./pipeline_parallel --dry-run 4096 --stages 4 --tp 4   # the plan for 4096 ranks, none started
//   ./pipeline_parallel --devices 2 --resnet document       # the document's widths, as the Python script
//   ./pipeline_parallel --devices 8 --tp 2 --explain --save-strategy-file used.json --save-graphs saved_graph
//
// --stages S: any count up to the network's 6 cells (head, layer1..4, fc; seed003_net.h splits
// them), with --devices a multiple of S (devices / S data-parallel replicas; S defaults to the
// seed's 2, or 1 on 1 device). --tp T splits each stage's convolutions and BatchNorms over T
// devices by channel (seed003_net.h's shard_channels) and --dp D is the data-parallel degree:
// --devices = D x stages x T (D defaults to what is left).
// --schedule: gpipe, 1f1b (MindSpore's default), interleaved_1f1b
// (with --interleave V >= 2 model chunks per device, S x V <= 6, micro-batches a multiple of S)
// or zb_h1. --micro-batches M: micro-batches per batch (PipelineCell's micro_size; sfviz's
// option of the same name), at least S, dividing --batch. Every such configuration is checked before any rank
// communicates.
//
// --parallel-mode auto runs the strategy search on each stage over the stage's devices (from the
// --tp strategies, if any); semi_auto (the default) runs the given strategies, data parallel elsewhere.
// --strategy-file FILE replaces the strategies of the ops it names; --save-strategy-file FILE writes
// every op's, defaults included; --explain prints each op's and where it came from; --save-graphs
// DIR writes each rank's parallel IR under DIR/rank_<r>/. All of them, and --dry-run N (the plan of
// N ranks: each stage's ranks, memory and bytes moved per step), are done before any rank
// communicates. A dry run's batch is --batch if given, else one row per device of a stage in each
// micro-batch, and at least 32 rows.
//
// The loss of a step is the sum of its micro-batches' losses (MindSpore's PipelineCell). After
// training, every rank evaluates the whole network on the test set with the stages' parameters.
//
// Training goes through train_elastic: under `sfrun --elastic MIN:MAX` a lost rank's stage is
// taken over from its data-parallel replica and the survivors go on with the stages their count
// allows (docs/elastic.md). --fit-stages makes that count gcd(--stages, ranks), so that every
// world trains (2 stages x 2 on 4 ranks, 1 stage x 3 on 3); every rank count in MIN..MAX is
// checked before the job starts, and every rank prints its loss lines:
//
//   sfrun -n 4 --elastic 2:4 -- ./build/examples/pipeline_parallel --fit-stages --batch 48
#include <algorithm>
#include <numeric>
#include <fmt/format.h>
#include <iostream>

#include "examples/example_main.h"
#include "examples/seed003_net.h"
#include "examples/strategy_options.h"
#include <shardflow/core/cli_checks.h>
#include <shardflow/shardflow.h>
#include <shardflow/train/pipeline_plan.h>

namespace {

namespace ds = sf::dataset;
namespace ex = sf::examples;

struct Options {
  int stages = 0, micro_size = 2, interleave = 1;  // stages 0: the seed's 2, or 1 on 1 device
  bool fit_stages = false;                         // gcd(stages, devices) stages on any device count
  std::string elastic_timeline;                    // each rank's steps and membership changes
  int tp = 1, dp = 0;                              // dp 0: devices / (stages x tp)
  int64_t batch = 32, eval_rows = 2000;
  std::string schedule = "1f1b", timeline;
  std::string parallel_mode = "semi_auto", save_graphs;
  ex::StrategyOptions strategies;
  int64_t dry_run = 0;
  std::string resnet = "small";  // or "document": the document's widths (seed003_net.h)
};

// The stages on `devices` devices: --stages, or with --fit-stages the most of them that the
// device count allows.
int stages_on(const Options& o, int devices) { return o.fit_stages ? std::gcd(o.stages, devices) : o.stages; }

// The seed's network as every rank builds it, its channels cut by --tp.
struct Network {
  seed003::ResNet net;
  sf::nn::PipelineCell cell;
  Network(const Options& o, int devices)
      : net(10, o.resnet == "document" ? seed003::ResNetShape::document() : seed003::ResNetShape{}),
        cell(sf::nn::WithLossCell(net, sf::nn::CrossEntropyLoss()), o.micro_size) {
    const int stages = stages_on(o, devices);
    net.set_stages(stages * o.interleave);
    if (o.tp > 1) net.shard_channels(devices / (stages * o.tp), o.tp);
  }
};

// The context every rank of a job on `devices` devices trains in (and a plan is made in).
sf::AutoParallelContext pipeline_context(const Options& o, int devices) {
  return {.parallel_mode = o.parallel_mode == "auto" ? sf::ParallelMode::kAutoParallel
                                                     : sf::ParallelMode::kSemiAutoParallel,
          .gradients_mean = true,
          .dataset_strategy = "full_batch",
          .strategy_ckpt_load_file = o.strategies.strategy_file,
          .save_graphs = !o.save_graphs.empty(),
          .save_graphs_path = o.save_graphs.empty() ? "saved_graph" : o.save_graphs,
          .pipeline_stages = stages_on(o, devices),
          .pipeline_scheduler = o.schedule,
          .pipeline_interleave = o.interleave};
}

// The plan of the step on `devices` ranks for batches of `batch` rows, none started.
sf::PipelinePlan plan(const Options& o, int devices, int64_t batch) {
  sf::set_seed(3);
  Network n(o, devices);
  return sf::plan_pipeline(n.cell, {{batch, 1, 28, 28}, {batch}}, {sf::DType::kF32, sf::DType::kI32}, devices,
                           pipeline_context(o, devices));
}

// Where --explain says a given strategy came from.
std::string given_by(const Options& o) {
  return o.strategies.strategy_file.empty() ? "shard_channels (--tp)" : "the strategy file or --tp";
}

ds::Dataset create_dataset(const std::string& data_dir, const std::string& usage, int64_t rows, int64_t batch) {
  ds::Dataset d = ds::Dataset::mnist(data_dir, usage).take(rows);
  d = d.map({ds::Rescale(1.0f / 255.0f, 0.0f), ds::Normalize({0.2860f}, {0.3530f}), ds::HWC2CHW()}, "image");
  d = d.map({ds::TypeCast(sf::DType::kI32)}, "label");
  return d.batch(batch, usage == "train");  // the whole test set, a short last batch too
}

// The configuration's rules on `devices` devices, each refused with its reason before any rank
// communicates (the library checks them again when the first step is built, on every rank).
void check_configuration(const Options& o, int devices, int64_t batch) {
  const int stages = stages_on(o, devices);
  SF_ENFORCE(devices % (stages * o.tp) == 0, InvalidArgument,
             "pipeline: --stages {}{} does not divide the {} devices: data-parallel x stages x tensor-parallel must "
             "equal the device count{}",
             stages, o.tp > 1 ? fmt::format(" x --tp {}", o.tp) : "", devices,
             o.fit_stages ? "" : " (--fit-stages uses gcd(--stages, devices) stages)");
  SF_ENFORCE(o.dp == 0 || o.dp * stages * o.tp == devices, InvalidArgument,
             "pipeline: --dp {} x --stages {} x --tp {} = {}, but there are {} devices", o.dp, stages, o.tp,
             o.dp * stages * o.tp, devices);
  SF_ENFORCE(stages * o.interleave <= seed003::ResNet::kCells, InvalidArgument,
             "pipeline: --stages {} x --interleave {} is more than the ResNet's {} cells: each virtual stage needs a "
             "cell of its own",
             stages, o.interleave, seed003::ResNet::kCells);
  SF_ENFORCE(o.micro_size >= stages, InvalidArgument,
             "pipeline: --micro-batches {} is smaller than --stages {}; each stage needs a micro-batch of its own "
             "(micro-batches >= stages)",
             o.micro_size, stages);
  SF_ENFORCE(batch % o.micro_size == 0, InvalidArgument,
             "pipeline: --batch {} is not divisible by --micro-batches {}", batch, o.micro_size);
  const int dp = devices / stages;
  SF_ENFORCE((batch / o.micro_size) % dp == 0, InvalidArgument,
             "pipeline: a micro-batch of {} rows cannot be split over the {} devices of a stage",
             batch / o.micro_size, dp);
  // The schedule's own rules: a known name, --interleave only with interleaved_1f1b, and there
  // V >= 2 and micro-batches a multiple of the stages.
  sf::pipeline::make_schedule(sf::pipeline::schedule_kind(o.schedule), stages, o.micro_size, o.interleave);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::Example example("Seed 003: pipeline-parallel training of a ResNet on Fashion-MNIST",
                      ex::kDataDir | ex::kEpochs | ex::kSteps | ex::kPrintEvery | ex::kCheckpoint);
  example.common().steps = 200;
  example.common().print_every = 20;
  CLI::App& app = example.cli();
  app.add_option("--stages", o.stages, "pipeline stages, up to 6 (default: the seed's 2, or 1 on 1 device)")
      ->check(sf::cli::kPositive);
  app.add_option("--schedule", o.schedule, "gpipe, 1f1b, interleaved_1f1b or zb_h1");
  app.add_option("--interleave", o.interleave, "model chunks per device (interleaved_1f1b: 2 or more)")
      ->check(sf::cli::kPositive);
  app.add_option("--resnet", o.resnet,
                 "small (16 to 256 channels) or document (the seed's 64 to 2048, as python/examples/resnet.py)")
      ->check(CLI::IsMember({"small", "document"}));
  app.add_option("--tp", o.tp, "tensor-parallel devices per stage: convolutions and BatchNorms split by channel")
      ->check(sf::cli::kPositive);
  app.add_option("--dp", o.dp, "data-parallel degree (default: devices / (stages x tp))")->check(sf::cli::kPositive);
  app.add_option("--micro-batches", o.micro_size, "micro-batches per batch (PipelineCell's micro_size)")
      ->check(sf::cli::kPositive);
  app.add_option("--batch", o.batch, "rows per step (all micro-batches, all data-parallel replicas)")
      ->check(sf::cli::kPositive);
  app.add_option("--eval-rows", o.eval_rows, "test images to evaluate on (in batches of up to 250)")
      ->check(sf::cli::kPositive);
  app.add_flag("--fit-stages", o.fit_stages,
               "use gcd(--stages, devices) stages, so that any device count trains (the worlds of sfrun --elastic)");
  app.add_option("--elastic-timeline", o.elastic_timeline,
                 "under sfrun --elastic: write DIR/rank.R.timeline.json (steps and membership changes, for sfviz "
                 "show)");
  app.add_option("--timeline", o.timeline, "write the last step's measured timeline (JSON, for sfviz show)");
  app.add_option("--parallel-mode", o.parallel_mode, "semi_auto (the given strategies) or auto (searched per stage)")
      ->check(CLI::IsMember({"semi_auto", "auto"}));
  app.add_option("--save-graphs", o.save_graphs, "write each rank's parallel IR under DIR/rank_<r>/");
  ex::add_strategy_options(app, o.strategies);
  app.add_option("--dry-run", o.dry_run, "plan the job for N ranks without starting any, and print per stage "
                                         "its ranks, memory and the bytes moved per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  const ex::CommonOptions& c = example.common();

  ds::Dataset train, test;
  example.prepare = [&](const sf::comm::JobSpec& job) {
    const int devices = o.dry_run > 0 ? static_cast<int>(o.dry_run) : job.size;
    if (o.stages == 0) o.stages = devices == 1 ? 1 : 2;
    // Ops without a strategy cut the batch over all the stage's devices: a row per device at least.
    // (At least 1: a device count the stages do not divide is refused just below.)
    const int64_t rows = static_cast<int64_t>(o.micro_size) * std::max(1, devices / stages_on(o, devices));
    const int64_t batch = o.dry_run > 0 && app.count("--batch") == 0 ? rows * std::max<int64_t>(1, 32 / rows) : o.batch;
    check_configuration(o, devices, batch);
    if (o.dry_run == 0) ex::check_elastic_worlds([&](int ranks) { check_configuration(o, ranks, batch); });
    if (!o.elastic_timeline.empty()) sf::prepare_timeline_dir(o.elastic_timeline);  // before the job starts
    sf::set_auto_parallel_context(pipeline_context(o, devices));
    if (o.dry_run > 0) {
      const sf::PipelinePlan p = plan(o, devices, batch);
      std::cout << p.str(o.strategies.explain, given_by(o));
      if (!o.strategies.save_strategy_file.empty()) sf::save_strategy_file(o.strategies.save_strategy_file, p.used());
      return ex::Next::kDone;
    }
    // The strategies are checked (a strategy file's against every stage), explained and saved on
    // the plan of this job, before any rank communicates.
    if (!o.strategies.strategy_file.empty() || o.strategies.explain || !o.strategies.save_strategy_file.empty()) {
      const sf::PipelinePlan p = plan(o, devices, batch);
      if (job.rank == 0 && o.strategies.explain) std::cout << p.str(true, given_by(o));
      if (job.rank == 0 && !o.strategies.save_strategy_file.empty())
        sf::save_strategy_file(o.strategies.save_strategy_file, p.used());
    }
    // --steps 0: the whole training set.
    train = create_dataset(c.data_dir, "train", c.steps > 0 ? o.batch * c.steps : 60000, o.batch);
    // Fewer rows than one batch of 250 make one smaller batch, not an empty evaluation set.
    test = create_dataset(c.data_dir, "test", o.eval_rows, std::min<int64_t>(250, o.eval_rows));
    return ex::Next::kJoin;
  };
  example.run = [&] {
    sf::comm::run_ranks([&] {
      // Rank 0 (the first stage) reports the step's loss, as the seed's LossMonitor on device 0;
      // in an elastic job every rank does, so that the loss lines go on when rank 0 is lost.
      const bool elastic = sf::elastic_range_from_env().has_value();
      sf::ElasticOptions elastic_options;
      elastic_options.timeline_dir = o.elastic_timeline;
      // Each world (a new one after a membership change) builds the network for its rank count.
      const sf::TrainingSetup done = sf::train_elastic(c.epochs, [&](uint32_t generation) {
        const int devices = sf::comm::get_group_size(), rank = sf::comm::get_rank();
        if (generation > 0) sf::set_auto_parallel_context(pipeline_context(o, devices));
        sf::set_seed(3);
        auto n = std::make_shared<Network>(o, devices);
        sf::TrainingSetup s;
        s.model = std::make_shared<sf::Model>(
            n->cell, sf::nn::Momentum(n->net.infer_param_pipeline_stage(), 0.01f, 0.9f),
            sf::ExecOptions{.trace = !o.timeline.empty()});
        s.train_set = train;
        if (rank == 0 || elastic) s.callbacks.push_back(std::make_shared<sf::LossMonitor>(c.print_every));
        const int stages = stages_on(o, devices);
        if (rank == 0 && generation == 0)
          sf::write_line(std::cout, fmt::format("pipeline: {} stages x {} data-parallel{}, {} micro-batches, {}{}",
                                                stages, devices / (stages * o.tp),
                                                o.tp > 1 ? fmt::format(" x {} tensor-parallel", o.tp) : "",
                                                o.micro_size, o.schedule,
                                                o.interleave > 1 ? fmt::format(", {} chunks per device", o.interleave)
                                                                 : ""));
        // Every rank saves and resumes (a save is a collective): the parameters its stages hold.
        // Only the first world resumes --resume: later ones take the agreed step's state.
        s.from = example.checkpointing(*s.model, s.train_set, s.callbacks, generation == 0 ? c.resume : "");
        s.keep = n;
        return s;
      }, elastic_options);
      const int rank = sf::comm::get_rank();
      if (rank == 0 && !o.timeline.empty())
        sf::pipeline::write_timeline_file(o.timeline, done.model->pipeline_step()->runtime()->last_timeline());
      std::static_pointer_cast<Network>(done.keep)->net.set_train(false);
      const double accuracy = done.model->eval_accuracy(test);
      if (rank == 0) sf::write_line(std::cout, fmt::format("test accuracy: {:.4f}", accuracy));
    });
  };
  return example.main(argc, argv);
}
