// Tests for the optimizers (train/optimizer.h): one and two steps of SGD, Momentum and Adam on
// a two-element parameter against values worked out by hand, their state tensors, and the
// checks that refuse an unknown optimizer name or a gradient of the wrong shape.
#include <shardflow/train/optimizer.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <shardflow/core/error.h>

namespace sf::nn {
namespace {

// A named parameter "w" holding `values` (shape (n,)).
Parameter make_param(const std::vector<float>& values, const std::string& name = "w") {
  Parameter p({static_cast<int64_t>(values.size())}, "zeros");
  p.finalize(name, 0);
  p.value().copy_from(Tensor::from_vector({static_cast<int64_t>(values.size())}, values));
  return p;
}

Tensor grad(const std::vector<float>& values) {
  return Tensor::from_vector({static_cast<int64_t>(values.size())}, values);
}

TEST(Optimizer, SgdStepsAreMinusLearningRateTimesGradient) {
  Parameter w = make_param({1.0f, -2.0f});
  SGD opt({w}, 0.1f);
  opt.step({grad({0.5f, 0.25f})});
  EXPECT_FLOAT_EQ(w.value().f32()[0], 0.95f);    // 1 - 0.1 * 0.5
  EXPECT_FLOAT_EQ(w.value().f32()[1], -2.025f);  // -2 - 0.1 * 0.25
  opt.step({grad({-1.0f, 4.0f})});
  EXPECT_FLOAT_EQ(w.value().f32()[0], 1.05f);    // 0.95 + 0.1
  EXPECT_FLOAT_EQ(w.value().f32()[1], -2.425f);  // -2.025 - 0.4
  EXPECT_EQ(opt.global_step(), 2);
  EXPECT_TRUE(opt.state().empty());
  EXPECT_EQ(opt.in_graph_sgd_rate(), std::optional<float>(0.1f));
}

TEST(Optimizer, SgdWeightDecayAddsToTheGradient) {
  Parameter w = make_param({2.0f});
  SGD opt({w}, 0.5f, 0.0f, 0.1f);
  opt.step({grad({1.0f})});
  EXPECT_FLOAT_EQ(w.value().f32()[0], 1.4f);  // 2 - 0.5 * (1 + 0.1 * 2)
  EXPECT_FALSE(opt.in_graph_sgd_rate().has_value());
}

TEST(Optimizer, MomentumAccumulatesVelocity) {
  Parameter w = make_param({1.0f, -1.0f});
  Momentum opt({w}, 0.1f, 0.9f);
  EXPECT_FALSE(opt.in_graph_sgd_rate().has_value());
  opt.step({grad({1.0f, 2.0f})});
  // v = g = (1, 2); w = (1, -1) - 0.1 v = (0.9, -1.2)
  EXPECT_FLOAT_EQ(w.value().f32()[0], 0.9f);
  EXPECT_FLOAT_EQ(w.value().f32()[1], -1.2f);
  opt.step({grad({0.5f, -1.0f})});
  // v = 0.9 (1, 2) + (0.5, -1) = (1.4, 0.8); w = (0.9, -1.2) - 0.1 v = (0.76, -1.28)
  EXPECT_FLOAT_EQ(w.value().f32()[0], 0.76f);
  EXPECT_FLOAT_EQ(w.value().f32()[1], -1.28f);
  const auto state = opt.state();
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].first, "moments.w");
  EXPECT_FLOAT_EQ(state[0].second.f32()[0], 1.4f);
  EXPECT_FLOAT_EQ(state[0].second.f32()[1], 0.8f);
}

TEST(Optimizer, AdamMatchesTheBiasCorrectedUpdate) {
  // MindSpore nn.Adam: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
  // p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps). Worked in double, with the
  // betas as the f32 values the optimizer holds (0.999f is 0.99900001287...).
  const double lr = 0.01, b1 = 0.9f, b2 = 0.999f, eps = 1e-8;
  Parameter w = make_param({1.0f, -0.5f});
  Adam opt({w}, static_cast<float>(lr));
  const double g1[] = {0.2, -3.0}, g2[] = {0.4, 1.0};
  double p[] = {1.0, -0.5}, m[] = {0, 0}, v[] = {0, 0};
  for (int t = 1; t <= 2; ++t) {
    const double* g = t == 1 ? g1 : g2;
    opt.step({grad({static_cast<float>(g[0]), static_cast<float>(g[1])})});
    const double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (int k = 0; k < 2; ++k) {
      m[k] = b1 * m[k] + (1 - b1) * static_cast<float>(g[k]);
      v[k] = b2 * v[k] + (1 - b2) * static_cast<float>(g[k]) * static_cast<float>(g[k]);
      p[k] -= alpha * m[k] / (std::sqrt(v[k]) + eps);
      EXPECT_NEAR(w.value().f32()[k], p[k], 1e-6) << "step " << t << " element " << k;
    }
    if (t == 1) {
      // Adam's first step moves every element by lr against the sign of its gradient.
      EXPECT_NEAR(w.value().f32()[0], 1.0 - lr, 1e-6);
      EXPECT_NEAR(w.value().f32()[1], -0.5 + lr, 1e-6);
    }
  }
  const auto state = opt.state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, "moment1.w");
  EXPECT_EQ(state[1].first, "moment2.w");
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(state[0].second.f32()[k], m[k], 1e-6 * std::fabs(m[k])) << k;
    EXPECT_NEAR(state[1].second.f32()[k], v[k], 1e-6 * std::fabs(v[k])) << k;
  }
  // By hand, element 0 after step 2: m = 0.9 * 0.02 + 0.1 * 0.4 = 0.058,
  // v = 0.999 * 4e-5 + 0.001 * 0.16 = 1.9996e-4 (to the f32 betas' precision).
  EXPECT_NEAR(state[0].second.f32()[0], 0.058, 1e-7);
  EXPECT_NEAR(state[1].second.f32()[0], 1.9996e-4, 1e-8);
  EXPECT_EQ(opt.global_step(), 2);
}

TEST(Optimizer, MakeOptimizerKnowsThreeNames) {
  Parameter w = make_param({1.0f});
  auto sgd = make_optimizer("sgd", {w}, 0.1f);
  EXPECT_NE(dynamic_cast<SGD*>(sgd.get()), nullptr);
  EXPECT_TRUE(sgd->in_graph_sgd_rate().has_value());
  auto momentum = make_optimizer("momentum", {w}, 0.1f);
  EXPECT_NE(dynamic_cast<Momentum*>(momentum.get()), nullptr);
  momentum->step({grad({1.0f})});
  momentum->step({grad({1.0f})});
  EXPECT_FLOAT_EQ(momentum->state()[0].second.f32()[0], 1.9f);  // momentum 0.9: v = 0.9 * 1 + 1
  auto adam = make_optimizer("adam", {w}, 0.1f);
  EXPECT_NE(dynamic_cast<Adam*>(adam.get()), nullptr);
}

TEST(Optimizer, MakeOptimizerRefusesUnknownNames) {
  Parameter w = make_param({1.0f});
  try {
    make_optimizer("adamw", {w}, 0.1f);
    FAIL() << "expected NotFound";
  } catch (const NotFound& e) {
    EXPECT_STREQ(e.what(), "unknown optimizer 'adamw' (known: sgd, momentum, adam)");
  }
}

TEST(Optimizer, WrongGradientShapeNamesTheParameterAndChangesNothing) {
  Parameter a = make_param({1.0f, 2.0f}, "fc1.bias");
  Parameter b = make_param({3.0f, 4.0f, 5.0f}, "fc2.bias");
  Momentum opt({a, b}, 0.1f, 0.9f);
  try {
    opt.step({grad({1.0f, 1.0f}), grad({1.0f, 1.0f})});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'fc2.bias'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(3,)"), std::string::npos) << msg;
  }
  // Nothing was applied: not even the first, well-shaped gradient.
  EXPECT_FLOAT_EQ(a.value().f32()[0], 1.0f);
  EXPECT_FLOAT_EQ(a.value().f32()[1], 2.0f);
  EXPECT_EQ(opt.global_step(), 0);
  EXPECT_THROW(opt.step({grad({1.0f, 1.0f})}), InvalidArgument);  // one gradient for two parameters
}

TEST(Optimizer, RefusesBadHyperparameters) {
  Parameter w = make_param({1.0f});
  EXPECT_THROW(SGD({w}, 0.0f), InvalidArgument);
  EXPECT_THROW(SGD({w}, -0.1f), InvalidArgument);
  EXPECT_THROW(SGD({w}, NAN), InvalidArgument);
  EXPECT_THROW(Momentum({w}, 0.1f, 0.0f), InvalidArgument);
  EXPECT_THROW(Adam({w}, 0.1f, 1.0f), InvalidArgument);
}

}  // namespace
}  // namespace sf::nn
