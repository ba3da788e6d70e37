// Tests for value_and_grad (train/value_and_grad.h) on a small nn::Mlp: the loss and gradients
// computed on the actor runtime equal those of the same graph built by hand and run by the
// plain reference Executor (ops/executor.h), and agree with central finite differences.
#include <shardflow/train/value_and_grad.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/executor.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/mlp.h>

namespace sf {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace value_and_grad_test {

constexpr int64_t kBatch = 8, kIn = 4, kHidden = 5, kClasses = 3;

Tensor random_inputs(uint64_t seed) {
  Tensor x({kBatch, kIn});
  fill_random(x, Distribution::kNormal, 0.0f, 1.0f, seed, 0);
  return x;
}

Tensor random_labels(uint64_t seed) {
  Tensor y({kBatch}, DType::kI32);
  for (int64_t i = 0; i < kBatch; ++i) y.i32()[i] = static_cast<int32_t>(uniform_at(seed, 1, i) * kClasses);
  return y;
}

// |a - b| within rtol of the larger magnitude (plus a tiny floor for exact zeros).
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << what << ": shape " << got.describe() << " vs " << want.describe();
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double a = got.f32()[i], b = want.f32()[i];
    if (std::fabs(a - b) > rtol * std::max(std::fabs(a), std::fabs(b)) + 1e-12)
      return ::testing::AssertionFailure() << what << "[" << i << "]: runtime " << a << " vs reference " << b;
  }
  return ::testing::AssertionSuccess();
}

class ValueAndGrad : public ::testing::Test {
 protected:
  void SetUp() override {
    set_seed(1234);
    net_ = std::make_unique<nn::Mlp>(kIn, std::vector<int64_t>{kHidden}, kClasses);
    params_ = net_->trainable_params();
  }
  void TearDown() override { set_seed(0); }

  LossBuilder loss_fn() {
    return [this](GraphBuilder& b, const std::vector<Value>& in) {
      return nn::CrossEntropyLoss()(b, (*net_)(b, in[0]), in[1]);
    };
  }

  std::unique_ptr<nn::Mlp> net_;
  ParameterList params_;
};

TEST_F(ValueAndGrad, ParametersAreTheMlpLayers) {
  ASSERT_EQ(params_.size(), 4u);
  EXPECT_EQ(params_[0].name(), "fc1_weight");
  EXPECT_EQ(params_[0].shape(), (Shape{kIn, kHidden}));
  EXPECT_EQ(params_[1].name(), "fc1_bias");
  EXPECT_EQ(params_[2].name(), "fc2_weight");
  EXPECT_EQ(params_[2].shape(), (Shape{kHidden, kClasses}));
  EXPECT_EQ(params_[3].name(), "fc2_bias");
}

TEST_F(ValueAndGrad, MatchesTheReferenceExecutorOnAHandBuiltGraph) {
  const Tensor x = random_inputs(7), labels = random_labels(7);
  GradFunction grad_fn = value_and_grad(loss_fn(), params_);
  const auto result = grad_fn({x, labels});
  const float loss = result.loss;
  std::vector<Tensor> grads;
  for (const Tensor& g : result.grads) grads.push_back(g.clone());
  ASSERT_EQ(grads.size(), params_.size());

  // The same network op by op: Flatten, x @ W1 + b1, ReLU, @ W2 + b2, cross entropy.
  Graph g;
  GraphBuilder b(g);
  const Value xin = b.input("x", x.shape());
  const Value yin = b.input("labels", labels.shape(), DType::kI32);
  std::vector<int> param_ids;
  for (const Parameter& p : params_) param_ids.push_back(b.parameter(p.name(), p.shape()).id);
  Value h = b.flatten(xin);
  h = b.relu(b.bias_add(b.matmul(h, {param_ids[0]}), {param_ids[1]}));
  const Value logits = b.bias_add(b.matmul(h, {param_ids[2]}), {param_ids[3]});
  const Value ref_loss = b.softmax_cross_entropy(logits, yin);
  std::vector<int> fetches = {ref_loss.id};
  for (int id : gradients(g, ref_loss.id, param_ids)) fetches.push_back(id);
  Executor ex(g, fetches);
  ex.bind(xin.id, x);
  ex.bind(yin.id, labels);
  for (size_t i = 0; i < params_.size(); ++i) ex.bind(param_ids[i], params_[i].value());
  const std::vector<Tensor>& want = ex.run();

  const float want_loss = want[0].item();
  EXPECT_GT(want_loss, 0.0f);
  EXPECT_NEAR(loss, want_loss, 1e-6 * std::fabs(want_loss));
  for (size_t i = 0; i < params_.size(); ++i) {
    EXPECT_TRUE(close(grads[i], want[i + 1], 1e-6, params_[i].name()));
    float norm = 0;
    for (float v : grads[i].to_vector()) norm += v * v;
    EXPECT_GT(norm, 0.0f) << params_[i].name() << " has an all-zero gradient";
  }
}

TEST_F(ValueAndGrad, GradientsMatchFiniteDifferences) {
  const Tensor x = random_inputs(11), labels = random_labels(11);
  GradFunction grad_fn = value_and_grad(loss_fn(), params_);
  std::vector<Tensor> grads;
  for (const Tensor& g : grad_fn({x, labels}).grads) grads.push_back(g.clone());

  // Parameters are bound by reference: perturb an element in place and run again.
  constexpr float kEps = 5e-3f;
  for (size_t pi = 0; pi < params_.size(); ++pi) {
    Tensor& value = params_[pi].value();
    for (int64_t k : {int64_t{0}, value.numel() / 2, value.numel() - 1}) {
      float* e = value.f32() + k;
      const float saved = *e;
      *e = saved + kEps;
      const double plus = grad_fn({x, labels}).loss;
      *e = saved - kEps;
      const double minus = grad_fn({x, labels}).loss;
      *e = saved;
      const double numeric = (plus - minus) / (2.0 * kEps);
      const double analytic = grads[pi].f32()[k];
      EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << params_[pi].name() << "[" << k << "]";
    }
  }
  // Restored parameters give back the original loss and gradients exactly.
  const auto again = grad_fn({x, labels});
  for (size_t i = 0; i < params_.size(); ++i) EXPECT_TRUE(bitwise_equal(again.grads[i], grads[i])) << i;
}

TEST_F(ValueAndGrad, ABatchOfAnotherSizeGetsItsOwnProgram) {
  GradFunction grad_fn = value_and_grad(loss_fn(), params_);
  const Tensor x = random_inputs(3), labels = random_labels(3);
  const float full = grad_fn({x, labels}).loss;
  Program* first = grad_fn.last_program();
  // The first two rows alone: a (2, 4) batch, whose loss is the mean over those rows only.
  const float part = grad_fn({x.rows(0, 2), labels.rows(0, 2)}).loss;
  EXPECT_NE(grad_fn.last_program(), first);
  EXPECT_NE(part, full);
  EXPECT_EQ(grad_fn({x, labels}).loss, full);
  EXPECT_EQ(grad_fn.last_program(), first);  // cached, not rebuilt
}

TEST_F(ValueAndGrad, AParameterTheLossDoesNotUseIsNamed) {
  Parameter stray({2}, "zeros");
  stray.finalize("stray.weight", 0);
  ParameterList with_stray = params_;
  with_stray.push_back(stray);
  GradFunction grad_fn = value_and_grad(loss_fn(), with_stray);
  try {
    grad_fn({random_inputs(1), random_labels(1)});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'stray.weight'"), std::string::npos) << e.what();
  }
}

}  // namespace value_and_grad_test
}  // namespace
}  // namespace sf
