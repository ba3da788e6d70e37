// Seed 003, pipeline parallel: a ResNet (examples/seed003_net.h) trained on Fashion-MNIST over
// pipeline stages, the batch cut into micro-batches (PipelineCell), Momentum on each stage's own
// parameters (infer_param_pipeline_stage), loss lines as the seed's LossMonitor prints them.
//
//   ./pipeline_parallel --devices 2                        # 2 stages (the seed's split), 1F1B
//   ./pipeline_parallel --devices 4 --stages 4 --micro-size 4 --scheduler gpipe
//   ./pipeline_parallel --devices 8 --stages 2             # 2 stages x 4-way data parallel
//   ./pipeline_parallel --devices 4 --stages 4 --timeline run.json && sfviz show run.json --plan --html run.html
//   mpirun -np 2 ./pipeline_parallel                       # one process per stage
//
// The loss of a step is the sum of its micro-batches' losses (MindSpore's PipelineCell). After
// training, every rank evaluates the whole network on the test set with the stages' parameters.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fmt/format.h>
#include <iostream>

#include <shardflow/core/cli_checks.h>
#include "examples/seed003_net.h"
#include <shardflow/shardflow.h>

namespace {

namespace ds = sf::dataset;

struct Options {
  int stages = 2, micro_size = 2, interleave = 1;
  int64_t batch = 32, steps = 200, eval_rows = 2000, print_every = 20;
  std::string scheduler = "1f1b", timeline, data_dir = "/usr/share/datasets/fashion-mnist";
};

ds::Dataset create_dataset(const Options& o, const std::string& usage, int64_t rows, int64_t batch) {
  ds::Dataset d = ds::Dataset::mnist(o.data_dir, usage).take(rows);
  d = d.map({ds::Rescale(1.0f / 255.0f, 0.0f), ds::Normalize({0.2860f}, {0.3530f}), ds::HWC2CHW()}, "image");
  d = d.map({ds::TypeCast(sf::DType::kI32)}, "label");
  return d.batch(batch);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // The job (--devices N, or the ranks sfrun / mpirun / Slurm started) is known from argv and
    // the environment, but joined only once the inputs are checked: a rank whose peers never
    // come must still stop at once on a bad input.
    const sf::comm::JobSpec spec = sf::comm::resolve_job(sf::comm::consume_comm_args(argc, argv), sf::comm::process_env());
    Options o;
    CLI::App app{"Seed 003: pipeline-parallel training of a ResNet on Fashion-MNIST"};
    app.add_option("--stages", o.stages, "pipeline stages (2: the seed's split; 4; or 1)")->check(CLI::IsMember({1, 2, 4}));
    app.add_option("--micro-size", o.micro_size, "micro-batches per batch (PipelineCell's micro_size)");
    app.add_option("--scheduler", o.scheduler, "gpipe, 1f1b, zb_h1");
    app.add_option("--batch", o.batch, "rows per step (all micro-batches, all data-parallel replicas)");
    app.add_option("--steps", o.steps, "training steps (the first batch x steps training images)");
    app.add_option("--eval-rows", o.eval_rows, "test images to evaluate on (in batches of up to 250)")
        ->check(sf::cli::kPositive);
    app.add_option("--print-every", o.print_every, "steps between loss lines");
    app.add_option("--timeline", o.timeline, "write the last step's measured timeline (JSON, for sfviz show)");
    app.add_option("--data-dir", o.data_dir, "Fashion-MNIST IDX files");
    CLI11_PARSE(app, argc, argv);

    sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kSemiAutoParallel,
                                   .gradients_mean = true,
                                   .dataset_strategy = "full_batch",
                                   .pipeline_stages = o.stages,
                                   .pipeline_scheduler = o.scheduler,
                                   .pipeline_interleave = o.interleave});
    const ds::Dataset train = create_dataset(o, "train", o.batch * o.steps, o.batch);
    // Fewer rows than one batch of 250 make one smaller batch, not an empty evaluation set.
    const ds::Dataset test = create_dataset(o, "test", o.eval_rows, std::min<int64_t>(250, o.eval_rows));
    sf::comm::init(spec);
    sf::comm::run_ranks([&] {
      const int rank = sf::comm::get_rank();
      sf::set_seed(3);
      seed003::ResNet net;
      net.set_stages(o.stages);
      sf::nn::PipelineCell net_pipeline(sf::nn::WithLossCell(net, sf::nn::CrossEntropyLoss()), o.micro_size);
      sf::Model model(net_pipeline, sf::nn::Momentum(net.infer_param_pipeline_stage(), 0.01f, 0.9f),
                      {.trace = !o.timeline.empty()});
      std::vector<sf::CallbackPtr> callbacks;
      if (rank == 0) callbacks.push_back(std::make_shared<sf::LossMonitor>(o.print_every));
      if (rank == 0)
        std::cout << fmt::format("pipeline: {} stages x {} data-parallel, {} micro-batches, {}\n", o.stages,
                                 sf::comm::get_group_size() / o.stages, o.micro_size, o.scheduler);
      model.train(1, train, callbacks);
      if (rank == 0 && !o.timeline.empty())
        sf::pipeline::write_timeline_file(o.timeline, model.pipeline_step()->runtime()->last_timeline());
      net.set_train(false);
      const double accuracy = model.eval_accuracy(test);
      if (rank == 0) std::cout << fmt::format("test accuracy: {:.4f}\n", accuracy);
    });
    sf::comm::release();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
