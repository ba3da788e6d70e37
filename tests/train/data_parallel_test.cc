// Data parallel (seed 004) equals 1 device: N ranks with global batch B train the seed MLP to
// the same loss per step as 1 device with batch B (the mean of the ranks' losses, within 1e-5
// relative, 50 steps), with bitwise identical parameters on every rank after every step — for
// N = 2, 4, 8 over inproc and zmq, through Model::train (fused-in-graph SGD reading the reduced
// buckets, and Momentum on fetched reduced gradients) and through the functional loop
// (DistributedGradReducer eager, and compiled into value_and_grad); for several bucket sizes;
// and the buckets' AllReduces do not wait for the rest of backward.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>

#include <shardflow/ops/plan.h>
#include "parallel_fixture.h"
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>
#include <shardflow/train/value_and_grad.h>

namespace sf {
namespace {

using traintest::image_rows;
using traintest::ParallelContextGuard;
using traintest::run_world;
using traintest::StepLog;
using traintest::Wire;

constexpr int64_t kSteps = 50;
constexpr int64_t kGlobalBatch = 32;
constexpr float kLr = 0.05f;
constexpr uint64_t kSeed = 7;

struct Run {
  std::vector<float> losses;     // per step (1 device), or per step per rank
  std::vector<Tensor> params;    // after the last step
};

std::unique_ptr<nn::Optimizer> make_opt(const std::string& kind, const ParameterList& params) {
  if (kind == "momentum") return std::make_unique<nn::Momentum>(params, kLr, 0.9f);
  return std::make_unique<nn::SGD>(params, kLr);
}

// The 1-device run every parallel run is compared with (computed once per optimizer).
const Run& one_device(const std::string& opt) {
  static std::mutex mu;
  static std::map<std::string, Run> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(opt);
  if (it != cache.end()) return it->second;
  set_seed(kSeed);
  nn::Mlp net(784, {512, 512}, 10);
  Model model(net, std::make_shared<nn::CrossEntropyLoss>(), make_opt(opt, net.trainable_params()));
  auto log = std::make_shared<StepLog>(net.trainable_params());
  model.train(1, image_rows(kSteps * kGlobalBatch).batch(kGlobalBatch), {log});
  Run r{log->losses, traintest::clone_values(net.trainable_params())};
  return cache.emplace(opt, std::move(r)).first->second;
}

// Checks N ranks' logs against the 1-device run: mean loss per step, identical fingerprints.
void expect_equivalent(const std::vector<std::vector<float>>& losses, const std::vector<std::vector<uint64_t>>& prints,
                       const std::vector<std::vector<Tensor>>& finals, const Run& ref) {
  const size_t n = losses.size();
  ASSERT_EQ(ref.losses.size(), static_cast<size_t>(kSteps));
  for (size_t r = 0; r < n; ++r) ASSERT_EQ(losses[r].size(), ref.losses.size()) << "rank " << r;
  for (size_t s = 0; s < ref.losses.size(); ++s) {
    double mean = 0;
    for (size_t r = 0; r < n; ++r) mean += losses[r][s];
    mean /= static_cast<double>(n);
    ASSERT_NEAR(mean, ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << "step " << s + 1;
    for (size_t r = 1; r < prints.size(); ++r) {
      ASSERT_EQ(prints[r][s], prints[0][s]) << "parameters of rank " << r << " differ from rank 0 after step " << s + 1;
    }
  }
  for (size_t r = 0; r < finals.size(); ++r)
    for (size_t i = 0; i < ref.params.size(); ++i) {
      const float* a = finals[r][i].f32();
      const float* b = ref.params[i].f32();
      float worst = 0;
      for (int64_t k = 0; k < ref.params[i].numel(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]));
      ASSERT_LT(worst, 2e-5f) << "rank " << r << " parameter " << i;
    }
}

// Model::train on n ranks with the data-parallel context; returns each rank's log.
void train_data_parallel(int n, Wire wire, const std::string& opt, int64_t bucket_bytes,
                         std::vector<std::vector<float>>& losses, std::vector<std::vector<uint64_t>>& prints,
                         std::vector<std::vector<Tensor>>& finals, std::vector<int>* all_reduces = nullptr) {
  ParallelContextGuard ctx(
      {.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true, .bucket_bytes = bucket_bytes});
  losses.assign(n, {});
  prints.assign(n, {});
  finals.assign(n, {});
  if (all_reduces) all_reduces->assign(n, 0);
  set_seed(kSeed);
  run_world(n, wire, [&](int rank) {
    nn::Mlp net(784, {512, 512}, 10);
    Model model(net, std::make_shared<nn::CrossEntropyLoss>(), make_opt(opt, net.trainable_params()));
    auto log = std::make_shared<StepLog>(net.trainable_params());
    model.train(1, image_rows(kSteps * kGlobalBatch, n, rank).batch(kGlobalBatch / n), {log});
    losses[rank] = log->losses;
    prints[rank] = log->prints;
    finals[rank] = traintest::clone_values(net.trainable_params());
    if (all_reduces)
      for (const Node& node : model.train_program()->graph.nodes()) (*all_reduces)[rank] += node.op == "AllReduce";
  });
}

class DataParallelEquivalence : public ::testing::TestWithParam<std::tuple<Wire, int>> {};

TEST_P(DataParallelEquivalence, ModelTrainMatchesOneDeviceWithIdenticalParametersOnEveryRank) {
  const auto [wire, n] = GetParam();
  std::vector<std::vector<float>> losses;
  std::vector<std::vector<uint64_t>> prints;
  std::vector<std::vector<Tensor>> finals;
  train_data_parallel(n, wire, "sgd", kDefaultBucketBytes, losses, prints, finals);
  expect_equivalent(losses, prints, finals, one_device("sgd"));
}

INSTANTIATE_TEST_SUITE_P(Ranks, DataParallelEquivalence,
                         ::testing::Combine(::testing::Values(Wire::kInproc, Wire::kZmq), ::testing::Values(2, 4, 8)),
                         [](const auto& info) {
                           return std::string(traintest::wire_name(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(DataParallel, EveryBucketSizeTrainsTheSameModel) {
  // 0: one AllReduce per large gradient (fc2's and fc1's weights) and one for the four small
  // ones; 64 KiB: the same; 64 MiB: the two weights together, then the small ones.
  for (int64_t bucket : {int64_t{0}, int64_t{64} << 10, int64_t{64} << 20}) {
    SCOPED_TRACE("bucket_bytes " + std::to_string(bucket));
    std::vector<std::vector<float>> losses;
    std::vector<std::vector<uint64_t>> prints;
    std::vector<std::vector<Tensor>> finals;
    std::vector<int> all_reduces;
    train_data_parallel(2, Wire::kInproc, "sgd", bucket, losses, prints, finals, &all_reduces);
    expect_equivalent(losses, prints, finals, one_device("sgd"));
    EXPECT_EQ(all_reduces[0], bucket == (int64_t{64} << 20) ? 2 : 3);
  }
}

TEST(DataParallel, MomentumStepsOnTheFetchedReducedGradients) {
  std::vector<std::vector<float>> losses;
  std::vector<std::vector<uint64_t>> prints;
  std::vector<std::vector<Tensor>> finals;
  train_data_parallel(2, Wire::kInproc, "momentum", kDefaultBucketBytes, losses, prints, finals);
  expect_equivalent(losses, prints, finals, one_device("momentum"));
}

TEST(DataParallel, TheUnfusedSgdUpdateItUsesEqualsTheFusedOne) {
  set_seed(kSeed);
  nn::Mlp net(784, {512, 512}, 10);
  Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), kLr), {.fuse_sgd = false});
  auto log = std::make_shared<StepLog>(net.trainable_params());
  model.train(1, image_rows(kSteps * kGlobalBatch).batch(kGlobalBatch), {log});
  int fused = 0;
  for (const Node& node : model.train_program()->graph.nodes()) fused += node.op == "MatMulGradientDescent";
  EXPECT_EQ(fused, 0);
  expect_equivalent({log->losses}, {}, {traintest::clone_values(net.trainable_params())}, one_device("sgd"));
}

// The seed's functional loop on n ranks: grad_fn, then grad_reducer(grads) (eager) or the
// reducer compiled into grad_fn (in_graph), then optimizer.step.
void functional_loop(int n, bool in_graph) {
  const Run& ref = one_device("sgd");  // before the data-parallel context: 1 device has no ranks
  ParallelContextGuard ctx({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
  std::vector<std::vector<float>> losses(n);
  std::vector<std::vector<uint64_t>> prints(n);
  std::vector<std::vector<Tensor>> finals(n);
  set_seed(kSeed);
  run_world(n, Wire::kInproc, [&](int rank) {
    nn::Mlp net(784, {512, 512}, 10);
    nn::SGD optimizer(net.trainable_params(), kLr);
    nn::CrossEntropyLoss loss_fn;
    auto forward_fn = [&](GraphBuilder& b, const std::vector<Value>& in) { return loss_fn(b, net(b, in[0]), in[1]); };
    nn::DistributedGradReducer grad_reducer(optimizer.parameters());
    GradFunction grad_fn = in_graph ? value_and_grad(forward_fn, net.trainable_params(), grad_reducer)
                                    : value_and_grad(forward_fn, net.trainable_params());
    dataset::BatchIterator it = image_rows(kSteps * kGlobalBatch, n, rank).batch(kGlobalBatch / n).iterator(0);
    while (const std::vector<Tensor>* batch = it.next()) {
      auto [loss, grads] = grad_fn(*batch);
      optimizer.step(in_graph ? grads : grad_reducer(grads));
      losses[rank].push_back(loss);
      prints[rank].push_back(traintest::fingerprint(optimizer.parameters()));
    }
    finals[rank] = traintest::clone_values(net.trainable_params());
  });
  expect_equivalent(losses, prints, finals, ref);
}

TEST(DataParallel, FunctionalLoopWithEagerGradReducerMatchesOneDevice) { functional_loop(4, false); }
TEST(DataParallel, FunctionalLoopWithTheReducerInTheGradientProgramMatchesOneDevice) { functional_loop(4, true); }

TEST(DataParallel, EachBucketsAllReduceWaitsOnlyForItsOwnGradients) {
  // Built, not run: with one bucket per gradient, fc2's weight gradient is reduced first, and
  // its AllReduce does not depend on fc1's weight gradient, so it is on the wire while fc1's
  // is computed.
  ParallelContextGuard ctx({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true, .bucket_bytes = 0});
  set_seed(kSeed);
  run_world(2, Wire::kInproc, [&](int rank) {
    nn::Mlp net(784, {512, 512}, 10);
    Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), kLr));
    auto log = std::make_shared<StepLog>(net.trainable_params());
    model.train(1, image_rows(2 * kGlobalBatch, 2, rank).batch(kGlobalBatch / 2), {log});
    const Graph& g = model.train_program()->graph;
    int first = -1, fc1_grad = -1;
    for (const Node& node : g.nodes()) {
      if (node.op == "AllReduce" && first < 0) first = node.id;
      if (node.op == "MatMul" && node.name.find("Gradients/fc1/") == 0) fc1_grad = node.id;
    }
    ASSERT_GE(first, 0);
    ASSERT_GE(fc1_grad, 0);
    const std::vector<int> deps = needed_nodes(g, {first});
    EXPECT_FALSE(std::binary_search(deps.begin(), deps.end(), fc1_grad)) << g.node(first).name;
    EXPECT_EQ(g.node(g.node(first).inputs[0]).name.find("Gradients/fc2/MatMul"), 0u) << "the first bucket is not fc2's";
  });
}

}  // namespace
}  // namespace sf
