// The seed MLP 784-512-512-10 on 1 device, trained with SGD on Debian's Fashion-MNIST
// through the actor runtime, printing seed-format loss lines and test accuracy.
// Preprocessing as the PyTorch reference (pixels / 255, PyTorch-style default init).
//
//   ./build/examples/fashion_mnist_mlp [--epochs 1] [--batch 32] [--threads 1] [--trace run.trace.json]
//   ./build/examples/fashion_mnist_mlp --epochs 2 --checkpoint-dir run --save-every 1000 --keep 2
//   ./build/examples/fashion_mnist_mlp --epochs 2 --resume run    # continues from run's latest step
//
// It is the 1-device reference: --devices N other than 1 is refused (data_parallel trains this
// network on N devices).
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "examples/example_main.h"
#include <shardflow/core/cli_checks.h>
#include <shardflow/ops/blas.h>
#include <shardflow/shardflow.h>

namespace {

namespace ex = sf::examples;

struct Options {
  int64_t batch = 32;
  float lr = 1e-2f;
  std::string optimizer = "sgd";
  int threads = 1;
  uint64_t seed = 0;
  std::string trace, dump_ir;
};

sf::dataset::Dataset load(const Options& o, const ex::CommonOptions& c, const std::string& usage, bool shuffle) {
  using namespace sf::dataset;
  Dataset ds = Dataset::mnist(c.data_dir, usage)
                   .map({Rescale(1.0f / 255.0f, 0.0f), HWC2CHW()}, "image")
                   .map({TypeCast(sf::DType::kI32)}, "label");
  if (shuffle) ds = ds.shuffle(o.seed);
  return ds.batch(o.batch, shuffle);
}

void run(const Options& o, const ex::Example& example) {
  const ex::CommonOptions& c = example.common();
  sf::set_seed(o.seed);
  auto train_set = load(o, c, "train", true);
  auto test_set = load(o, c, "test", false);
  sf::nn::Mlp net(28 * 28, {512, 512}, 10);
  auto optimizer = sf::nn::make_optimizer(o.optimizer, net.trainable_params(), o.lr);
  sf::Model model(net, std::make_shared<sf::nn::CrossEntropyLoss>(), std::move(optimizer),
                  {.threads = o.threads, .trace = !o.trace.empty()});
  std::vector<sf::CallbackPtr> callbacks{std::make_shared<sf::LossMonitor>(c.print_every),
                                         std::make_shared<sf::TimeMonitor>()};
  const sf::ResumePoint from = example.checkpointing(model, train_set, callbacks);
  std::cout << fmt::format("shardflow: MLP 784-512-512-10, {} lr {}, batch {}, {} epoch(s), 1 device, {} actor "
                           "thread(s), BLAS: {}\n",
                           o.optimizer, o.lr, o.batch, c.epochs, o.threads, sf::blas_config());
  model.train(c.epochs, train_set, callbacks, from);
  double acc = model.eval_accuracy(test_set);
  std::cout << fmt::format("test accuracy: {:.4f}", acc) << std::endl;
  if (!o.trace.empty()) {
    model.train_program()->runtime->write_trace(o.trace);
    std::cout << "trace written to " << o.trace << std::endl;
  }
  if (!o.dump_ir.empty()) {
    std::ofstream(o.dump_ir) << sf::print_ir(model.train_program()->graph);
    std::cout << "IR written to " << o.dump_ir << std::endl;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  ex::Example example("Train the seed MLP on Fashion-MNIST with shardflow's actor runtime",
                      ex::kDataDir | ex::kEpochs | ex::kPrintEvery | ex::kCheckpoint);
  example.common().print_every = 100;
  CLI::App& app = example.cli();
  app.add_option("--batch", o.batch, "batch size")->check(sf::cli::kPositive);
  app.add_option("--lr", o.lr, "learning rate")->check(sf::cli::kPositive);
  app.add_option("--optimizer", o.optimizer, "sgd, momentum or adam");
  app.add_option("--threads", o.threads, "actor worker threads")->check(sf::cli::kPositive);
  app.add_option("--seed", o.seed, "seed of initialisation and shuffling");
  app.add_option("--trace", o.trace, "write a Chrome/Perfetto trace of the last program's actor events");
  app.add_option("--dump-ir", o.dump_ir, "write the training graph's IR");
  example.prepare = [&](const sf::comm::JobSpec& job) {
    SF_ENFORCE(job.size == 1, InvalidArgument,
               "fashion_mnist_mlp trains on 1 device, not {}: it is the 1-device reference (data_parallel --devices "
               "{} trains this network on {})",
               job.size, job.size, job.size);
    return ex::Next::kJoin;
  };
  example.run = [&] { run(o, example); };
  return example.main(argc, argv);
}
