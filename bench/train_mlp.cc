// Training throughput of the seed MLP (784-512-512-10, SGD lr 1e-2) on Fashion-MNIST through
// the actor runtime, and the runtime's overhead per op firing.
//
//   ./build/bench/train_mlp --batch 32 --threads 1 [--epochs 1] [--reps 3]
//   ./build/bench/train_mlp --overhead [--ops 1000] [--steps 2000]
//
// Timing as the PyTorch reference (../shared/peers/train_fmnist.py): data pre-loaded, the
// clock runs from before the first step to after the last; samples/s = steps * batch / time.
// Prints one "RESULT,..." CSV line per measurement (median of --reps runs).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <iostream>

#include <shardflow/core/cli_checks.h>
#include <shardflow/ops/blas.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/shardflow.h>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One training run; returns samples/s and prints its loss summary.
double train_once(const sf::dataset::Dataset& train_set, const sf::dataset::Dataset& test_set, int threads,
                  int splits, int64_t epochs, bool report) {
  sf::set_seed(0);
  sf::nn::Mlp net(28 * 28, {512, 512}, 10);
  sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f), {.threads = threads, .batch_splits = splits});
  struct Tail : sf::Callback {
    std::vector<float> losses;
    void on_step_end(const sf::RunContext& c) override { losses.push_back(c.loss); }
  };
  auto tail = std::make_shared<Tail>();
  tail->losses.reserve(static_cast<size_t>(train_set.get_dataset_size() * epochs));
  auto t0 = Clock::now();
  model.train(epochs, train_set, {tail});
  double secs = seconds_since(t0);
  const auto& l = tail->losses;
  double samples = static_cast<double>(l.size() * train_set.batch_size());
  if (report) {
    double last100 = 0;
    size_t k = std::min<size_t>(100, l.size());
    for (size_t i = l.size() - k; i < l.size(); ++i) last100 += l[i];
    std::cout << fmt::format("# loss_last100 {:.4f} loss_last {:.4f} test_acc {:.4f}\n", last100 / k, l.back(),
                             model.eval_accuracy(test_set));
  }
  return samples / secs;
}

// A chain of `ops` no-op actors: (time per step) / ops = the runtime's cost per firing.
double overhead_us(int ops, int64_t steps, int threads) {
  if (!sf::OpRegistry::global().contains("BenchNoOp"))
    sf::OpRegistry::global().add({.name = "BenchNoOp",
                                  .arity = 1,
                                  .infer = [](const sf::Node&, const std::vector<const sf::Node*>& in) {
                                    return sf::TypeInfo{in[0]->shape, in[0]->dtype};
                                  },
                                  .forward = [](const sf::Node&, const std::vector<sf::Tensor>&, sf::Tensor&) {},
                                  .grad = {}});
  sf::Graph g;
  sf::GraphBuilder b(g);
  sf::Value x = b.input("x", {1});
  for (int i = 0; i < ops; ++i) x = b.op("BenchNoOp", {x});
  sf::Runtime rt(g, {x.id}, {.threads = threads});
  sf::Tensor in({1});
  for (int i = 0; i < 10; ++i) rt.run({{0, in}});
  auto t0 = Clock::now();
  for (int64_t s = 0; s < steps; ++s) rt.run({{0, in}});
  return seconds_since(t0) * 1e6 / static_cast<double>(steps * ops);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 32, epochs = 1, steps = 2000;
  int threads = 1, reps = 3, ops = 1000, splits = 0;
  bool overhead = false;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  CLI::App app{"shardflow MLP training benchmark"};
  app.add_option("--batch", batch)->check(sf::cli::kPositive);
  app.add_option("--threads", threads)->check(sf::cli::kPositive);
  app.add_option("--epochs", epochs)->check(sf::cli::kPositive);
  app.add_option("--splits", splits, "row blocks per batch (0 = one per thread)")->check(sf::cli::kNonNegative);
  app.add_option("--reps", reps)->check(sf::cli::kPositive);
  app.add_option("--data-dir", data_dir);
  app.add_flag("--overhead", overhead, "measure the per-firing overhead of a no-op graph instead");
  app.add_option("--ops", ops)->check(sf::cli::kPositive);
  app.add_option("--steps", steps)->check(sf::cli::kPositive);
  CLI11_PARSE(app, argc, argv);
  try {
    if (overhead) {
      std::vector<double> us;
      for (int r = 0; r < reps; ++r) us.push_back(overhead_us(ops, steps, threads));
      std::cout << "HEADER,what,threads,ops,us_per_firing\n"
                << fmt::format("RESULT,overhead,{},{},{:.3f}\n", threads, ops, median(us));
      return 0;
    }
    using namespace sf::dataset;
    auto load = [&](const char* usage, bool shuffle) {
      Dataset d = Dataset::mnist(data_dir, usage).map({Rescale(1.0f / 255.0f, 0.0f), HWC2CHW()}, "image");
      if (shuffle) d = d.shuffle(0);
      return d.batch(batch, shuffle);
    };
    Dataset train_set = load("train", true), test_set = load("test", false);
    std::vector<double> rates;
    for (int r = 0; r < reps; ++r) rates.push_back(train_once(train_set, test_set, threads, splits, epochs, r == 0));
    std::sort(rates.begin(), rates.end());
    std::cout << "HEADER,what,threads,batch,samples_per_s,min,max,blas\n"
              << fmt::format("RESULT,train,{},{},{:.1f},{:.1f},{:.1f},{}\n", threads, batch, median(rates),
                             rates.front(), rates.back(), sf::blas_config());
  } catch (const sf::Error& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
