// Manual parallel (seed 000): every rank is fed the whole batch, its network slices its rows by
// rank, and its loss is AllReduce(loss) / device_num inside the graph. In hybrid-parallel mode
// the replicated parameters' gradients are mean-reduced, and N = 2, 4, 8 ranks over inproc and
// zmq train to the 1-device loss per step (within 1e-5 relative, 50 steps) with bitwise
// identical parameters on every rank. The AllReduce's gradient is MindSpore's AllReduce(dout):
// each rank's parameter gradients are those of its own slice's mean loss, and their mean over
// the ranks is the 1-device gradient.
#include <gtest/gtest.h>

#include <cmath>

#include "manual_parallel_net.h"
#include "parallel_fixture.h"
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>
#include <shardflow/train/value_and_grad.h>

namespace sf {
namespace {

using traintest::image_rows;
using traintest::ReduceLoss;
using traintest::SlicedMlp;
using traintest::ParallelContextGuard;
using traintest::run_world;
using traintest::StepLog;
using traintest::Wire;

constexpr int64_t kSteps = 50;
constexpr int64_t kBatch = 32;
constexpr float kLr = 0.05f;
constexpr uint64_t kSeed = 11;

struct Reference {
  std::vector<float> losses;
  std::vector<Tensor> params;
};

const Reference& one_device() {
  static const Reference ref = [] {
    set_seed(kSeed);
    nn::Mlp net(784, {512, 512}, 10);
    Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), kLr));
    auto log = std::make_shared<StepLog>(net.trainable_params());
    model.train(1, image_rows(kSteps * kBatch).batch(kBatch), {log});
    return Reference{log->losses, traintest::clone_values(net.trainable_params())};
  }();
  return ref;
}

class ManualParallelEquivalence : public ::testing::TestWithParam<std::tuple<Wire, int>> {};

TEST_P(ManualParallelEquivalence, ModelTrainMatchesOneDeviceWithIdenticalParametersOnEveryRank) {
  // Copies, not a structured binding: clang 14 cannot capture bindings in a lambda.
  const Wire wire = std::get<0>(GetParam());
  const int n = std::get<1>(GetParam());
  const Reference& ref = one_device();
  ParallelContextGuard ctx({.parallel_mode = ParallelMode::kHybridParallel, .gradients_mean = true});
  std::vector<std::vector<float>> losses(n);
  std::vector<std::vector<uint64_t>> prints(n);
  std::vector<std::vector<Tensor>> finals(n);
  set_seed(kSeed);
  run_world(n, wire, [&](int rank) {
    const int64_t shard = kBatch / n;
    SlicedMlp net(rank * shard, rank * shard + shard);
    Model model(net, ReduceLoss(rank * shard, rank * shard + shard, n), nn::SGD(net.trainable_params(), kLr));
    auto log = std::make_shared<StepLog>(net.trainable_params());
    model.train(1, image_rows(kSteps * kBatch).batch(kBatch), {log});  // every rank: the whole batch
    losses[rank] = log->losses;
    prints[rank] = log->prints;
    finals[rank] = traintest::clone_values(net.trainable_params());
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(losses[r].size(), ref.losses.size());
    for (size_t s = 0; s < ref.losses.size(); ++s) {
      ASSERT_NEAR(losses[r][s], ref.losses[s], 1e-5 * std::abs(ref.losses[s])) << "rank " << r << " step " << s + 1;
      ASSERT_EQ(prints[r][s], prints[0][s]) << "parameters of rank " << r << " differ after step " << s + 1;
    }
    for (size_t i = 0; i < ref.params.size(); ++i) {
      float worst = 0;
      for (int64_t k = 0; k < ref.params[i].numel(); ++k)
        worst = std::max(worst, std::abs(finals[r][i].f32()[k] - ref.params[i].f32()[k]));
      ASSERT_LT(worst, 2e-5f) << "rank " << r << " parameter " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, ManualParallelEquivalence,
                         ::testing::Combine(::testing::Values(Wire::kInproc, Wire::kZmq), ::testing::Values(2, 4, 8)),
                         [](const auto& info) {
                           return std::string(traintest::wire_name(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

// value_and_grad of a plain MLP on `rows`: (loss, gradients).
std::pair<float, std::vector<Tensor>> one_device_grads(const std::vector<Tensor>& rows) {
  set_seed(kSeed);
  nn::Mlp net(784, {512, 512}, 10);
  nn::CrossEntropyLoss ce;
  auto grad_fn = value_and_grad(
      [&](GraphBuilder& b, const std::vector<Value>& in) { return ce(b, net(b, in[0]), in[1]); },
      net.trainable_params());
  auto [loss, grads] = grad_fn(rows);
  std::vector<Tensor> out;
  for (const Tensor& g : grads) out.push_back(g.clone());
  return {loss, out};
}

void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (int64_t k = 0; k < a.numel(); ++k)
    ASSERT_NEAR(a.f32()[k], b.f32()[k], 1e-6 + 1e-4 * std::abs(b.f32()[k])) << what << " element " << k;
}

TEST(ManualParallel, AllReducesGradientGivesEachRankItsSlicesGradientAndTheirMeanIsOneDevices) {
  constexpr int n = 2;
  const int64_t shard = kBatch / n;
  dataset::BatchIterator it = image_rows(kBatch).batch(kBatch).iterator(0);
  const std::vector<Tensor> batch = *it.next();
  const auto [full_loss, full_grads] = one_device_grads(batch);
  std::vector<std::vector<Tensor>> slice_grads(n), rank_grads(n);
  std::vector<float> rank_loss(n);
  for (int r = 0; r < n; ++r)
    slice_grads[r] = one_device_grads({batch[0].rows(r * shard, (r + 1) * shard), batch[1].rows(r * shard, (r + 1) * shard)}).second;
  // Stand-alone mode: no gradient reduction, only the graph's own AllReduce and its bprop.
  set_seed(kSeed);
  run_world(n, Wire::kInproc, [&](int rank) {
    SlicedMlp net(rank * shard, rank * shard + shard);
    ReduceLoss loss_fn(rank * shard, rank * shard + shard, n);
    auto grad_fn = value_and_grad(
        [&](GraphBuilder& b, const std::vector<Value>& in) { return loss_fn(b, net(b, in[0]), in[1]); },
        net.trainable_params());
    auto [loss, grads] = grad_fn(batch);
    rank_loss[rank] = loss;
    for (const Tensor& g : grads) rank_grads[rank].push_back(g.clone());
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_NEAR(rank_loss[r], full_loss, 1e-5 * full_loss) << "rank " << r;
    for (size_t i = 0; i < full_grads.size(); ++i) expect_close(rank_grads[r][i], slice_grads[r][i], "rank grad");
  }
  for (size_t i = 0; i < full_grads.size(); ++i) {
    Tensor mean(full_grads[i].shape());
    for (int64_t k = 0; k < mean.numel(); ++k) mean.f32()[k] = (rank_grads[0][i].f32()[k] + rank_grads[1][i].f32()[k]) / 2;
    expect_close(mean, full_grads[i], "mean of the ranks' gradients");
  }
}

}  // namespace
}  // namespace sf
