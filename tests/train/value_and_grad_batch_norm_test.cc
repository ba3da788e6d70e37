// value_and_grad on a network with BatchNorm: the moving statistics (not differentiated, not in
// the parameters passed) are bound and their in-place updates run each call, so a functional
// training loop gives the losses, parameters and moving statistics Model::train gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"
#include <shardflow/train/conv_layers.h>
#include <shardflow/train/model.h>
#include <shardflow/train/value_and_grad.h>

namespace sf::traintest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace value_and_grad_batch_norm_test {

constexpr float kLr = 0.02f, kMomentum = 0.9f;
constexpr int64_t kBatch = 8, kSteps = 5;

struct BnNet {
  std::shared_ptr<nn::BatchNorm2d> bn = std::make_shared<nn::BatchNorm2d>(16);
  std::shared_ptr<nn::SequentialCell> net = std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(kPipeFeatures, 16), bn, std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(16, 10)});
};

void expect_close(const ParameterList& got, const ParameterList& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const std::vector<float> a = got[i].value().to_vector(), b = want[i].value().to_vector();
    ASSERT_EQ(a.size(), b.size()) << got[i].name();
    for (size_t k = 0; k < a.size(); ++k)
      ASSERT_NEAR(a[k], b[k], 1e-5f * std::max(1.0f, std::fabs(b[k]))) << got[i].name() << "[" << k << "]";
  }
}

TEST(ValueAndGradBatchNorm, TrainsLikeModelAndMovesTheMovingStatistics) {
  const dataset::Dataset data = pipe_rows(kBatch * kSteps);

  set_seed(1);
  BnNet by_model;
  Model model(*by_model.net, nn::CrossEntropyLoss(), nn::Momentum(by_model.net->trainable_params(), kLr, kMomentum));
  auto log = std::make_shared<StepLog>(ParameterList{});
  model.train(1, data.batch(kBatch), {log});

  set_seed(1);
  BnNet functional;
  const std::vector<float> mean_before = functional.bn->moving_mean().value().to_vector();
  const std::vector<float> var_before = functional.bn->moving_variance().value().to_vector();
  nn::Momentum opt(functional.net->trainable_params(), kLr, kMomentum);
  nn::CrossEntropyLoss ce;
  GradFunction grad_fn = value_and_grad(
      [&](GraphBuilder& b, const std::vector<Value>& in) { return ce(b, (*functional.net)(b, in[0]), in[1]); },
      functional.net->trainable_params());
  std::vector<float> losses;
  dataset::BatchIterator it = data.batch(kBatch).iterator(0);
  while (const std::vector<Tensor>* batch = it.next()) {
    auto [loss, grads] = grad_fn(*batch);
    ASSERT_EQ(grads.size(), opt.parameters().size());
    losses.push_back(loss);
    opt.step(grads);
  }

  ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(log->losses.size(), losses.size());
  for (size_t s = 0; s < losses.size(); ++s) EXPECT_NEAR(losses[s], log->losses[s], 1e-5f) << "step " << s;
  EXPECT_NE(functional.bn->moving_mean().value().to_vector(), mean_before);
  EXPECT_NE(functional.bn->moving_variance().value().to_vector(), var_before);
  expect_close(functional.net->get_parameters(), by_model.net->get_parameters());
}

}  // namespace value_and_grad_batch_norm_test
}  // namespace
}  // namespace sf::traintest
