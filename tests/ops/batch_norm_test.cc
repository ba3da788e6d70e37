// BatchNorm: training (batch statistics) and inference (moving statistics) against a direct
// per-channel loop, on NCHW and (N, C) inputs; finite-difference gradients for x, gamma and beta
// in both modes (also inside conv + BatchNorm + residual Add); the in-place moving-statistics
// update (MindSpore's momentum, unbiased variance) and how its nodes are recognised.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include <shardflow/ops/builder.h>
#include <shardflow/ops/executor.h>
#include <shardflow/ops/op_def.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::random_tensor;
using optest::run_graph;

constexpr double kEps = 1e-5;

// Per channel c of x (N, C, ...): the mean and the variance divided by `count - ddof`.
struct ChannelStats {
  std::vector<double> mean, var;
};

ChannelStats channel_stats(const Tensor& x, int ddof) {
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / (n * c);
  ChannelStats s{std::vector<double>(c, 0.0), std::vector<double>(c, 0.0)};
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < inner; ++k) s.mean[ch] += x.f32()[(b * c + ch) * inner + k];
    s.mean[ch] /= static_cast<double>(n * inner);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < inner; ++k) {
        const double d = x.f32()[(b * c + ch) * inner + k] - s.mean[ch];
        s.var[ch] += d * d;
      }
    s.var[ch] /= static_cast<double>(n * inner - ddof);
  }
  return s;
}

// gamma (x - mean) / sqrt(var + eps) + beta with the given per-channel statistics.
Tensor naive_bn(const Tensor& x, const Tensor& gamma, const Tensor& beta, const std::vector<double>& mean,
                const std::vector<double>& var) {
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / (n * c);
  Tensor out(x.shape());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t k = 0; k < inner; ++k) {
        const int64_t i = (b * c + ch) * inner + k;
        out.f32()[i] = static_cast<float>(gamma.f32()[ch] * (x.f32()[i] - mean[ch]) / std::sqrt(var[ch] + kEps) +
                                          beta.f32()[ch]);
      }
  return out;
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v;
  for (float f : t.to_vector()) v.push_back(f);
  return v;
}

// A BatchNorm graph on x of `shape`, its five inputs bound to random tensors.
struct BnGraph {
  Graph g;
  Value x, gamma, beta, mean, var, y;
  std::vector<optest::Binding> bindings;

  BnGraph(const Shape& shape, bool training) {
    GraphBuilder gb(g);
    const Shape ch{shape[1]};
    x = gb.parameter("x", shape);
    gamma = gb.parameter("gamma", ch);
    beta = gb.parameter("beta", ch);
    mean = gb.parameter("moving_mean", ch);
    var = gb.parameter("moving_variance", ch);
    y = gb.batch_norm(x, gamma, beta, mean, var, training);
    // x with a per-channel offset and spread, so that normalising really changes it.
    Tensor xv = random_tensor(shape, 1, -2.0f, 3.0f);
    bindings = {{x.id, xv},
                {gamma.id, random_tensor(ch, 2, 0.5f, 1.5f)},
                {beta.id, random_tensor(ch, 3)},
                {mean.id, random_tensor(ch, 4)},
                {var.id, random_tensor(ch, 5, 0.5f, 2.0f)}};
  }
  const Tensor& value(Value v) const {
    for (const auto& b : bindings)
      if (b.id == v.id) return b.value;
    throw std::logic_error("unbound");
  }
};

class BatchNormTest : public ::testing::TestWithParam<Shape> {};

TEST_P(BatchNormTest, TrainingNormalisesWithTheBatchStatistics) {
  BnGraph bn(GetParam(), true);
  const Tensor mean_before = bn.value(bn.mean).clone(), var_before = bn.value(bn.var).clone();
  const Tensor got = run_graph(bn.g, {bn.y.id}, bn.bindings)[0];
  const ChannelStats s = channel_stats(bn.value(bn.x), 0);  // biased
  const Tensor want = naive_bn(bn.value(bn.x), bn.value(bn.gamma), bn.value(bn.beta), s.mean, s.var);
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.f32()[i], want.f32()[i], 1e-4) << "element " << i;
  // BatchNorm alone never touches the moving statistics.
  EXPECT_TRUE(bitwise_equal(bn.value(bn.mean), mean_before));
  EXPECT_TRUE(bitwise_equal(bn.value(bn.var), var_before));
}

TEST_P(BatchNormTest, InferenceNormalisesWithTheMovingStatistics) {
  BnGraph bn(GetParam(), false);
  const Tensor got = run_graph(bn.g, {bn.y.id}, bn.bindings)[0];
  const Tensor want = naive_bn(bn.value(bn.x), bn.value(bn.gamma), bn.value(bn.beta), as_doubles(bn.value(bn.mean)),
                               as_doubles(bn.value(bn.var)));
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.f32()[i], want.f32()[i], 1e-4) << "element " << i;
}

TEST_P(BatchNormTest, TrainingGradientsMatchFiniteDifferences) {
  BnGraph bn(GetParam(), true);
  optest::GradCheckOptions opt;
  // Moving one x moves every output through the batch statistics, so each f32 loss carries
  // the rounding of all of them; a 2e-3 step left central differences off by ~5 % on builds
  // without FMA. BatchNorm is smooth: a larger step costs no accuracy.
  opt.eps = 1e-2f;
  EXPECT_TRUE(check_gradients(bn.g, bn.y.id, bn.bindings, {bn.x.id, bn.gamma.id, bn.beta.id}, opt));
}

TEST_P(BatchNormTest, InferenceGradientsMatchFiniteDifferences) {
  BnGraph bn(GetParam(), false);
  EXPECT_TRUE(check_gradients(bn.g, bn.y.id, bn.bindings, {bn.x.id, bn.gamma.id, bn.beta.id}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchNormTest,
                         ::testing::Values(Shape{4, 3, 5, 5}, Shape{2, 3, 4, 6}, Shape{3, 2, 1, 1}, Shape{6, 4},
                                           Shape{2, 2, 7, 9}),
                         [](const auto& info) { return fmt::format("{}", fmt::join(info.param, "x")); });

TEST(BatchNorm, TrainingAndInferenceAgreeWhenTheMovingStatisticsAreTheBatchs) {
  const Shape shape{4, 3, 3, 3};
  BnGraph train(shape, true), infer(shape, false);
  const ChannelStats s = channel_stats(train.value(train.x), 0);
  Tensor mean({3}), var({3});
  for (int c = 0; c < 3; ++c) {
    mean.f32()[c] = static_cast<float>(s.mean[c]);
    var.f32()[c] = static_cast<float>(s.var[c]);
  }
  for (auto& b : infer.bindings) {
    if (b.id == infer.mean.id) b.value = mean;
    if (b.id == infer.var.id) b.value = var;
  }
  const Tensor a = run_graph(train.g, {train.y.id}, train.bindings)[0];
  const Tensor b = run_graph(infer.g, {infer.y.id}, infer.bindings)[0];
  for (int64_t i = 0; i < a.numel(); ++i) ASSERT_NEAR(a.f32()[i], b.f32()[i], 1e-4) << "element " << i;
  // And with the random moving statistics the two modes differ.
  BnGraph other(shape, false);
  const Tensor c = run_graph(other.g, {other.y.id}, other.bindings)[0];
  EXPECT_GT(std::fabs(a.f32()[0] - c.f32()[0]) + std::fabs(a.f32()[40] - c.f32()[40]), 1e-2);
}

TEST(BatchNorm, UpdateMovingFoldsTheBatchStatisticsInPlace) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 2, 2, 2});
  Value mean = gb.parameter("bn.moving_mean", {2}), var = gb.parameter("bn.moving_variance", {2});
  const std::vector<Value> updates = gb.batch_norm_update(x, mean, var, 0.9f);
  ASSERT_EQ(updates.size(), 2u);
  // Channel 0: 0..3 and 8..11 -> mean 5.5; channel 1: 4..7 and 12..15 -> mean 9.5. Both have
  // squared deviations summing to 2 * 5 within the halves plus 8 * 4^2 between them = 138:
  // unbiased variance 138 / 7.
  const Tensor xv = optest::iota({2, 2, 2, 2});
  Tensor mv = floats({2}, {1.0f, -1.0f}), vv = floats({2}, {1.0f, 2.0f});
  Executor ex(g, {updates[0].id, updates[1].id});
  ex.bind(x.id, xv);
  ex.bind(mean.id, mv);
  ex.bind(var.id, vv);
  const std::vector<Tensor>& out = ex.run();
  EXPECT_TRUE(out[0].shares_storage(mv));  // the update's output is the moving tensor itself
  EXPECT_TRUE(out[1].shares_storage(vv));
  EXPECT_NEAR(mv.f32()[0], 0.9 * 1.0 + 0.1 * 5.5, 1e-6);
  EXPECT_NEAR(mv.f32()[1], 0.9 * -1.0 + 0.1 * 9.5, 1e-6);
  EXPECT_NEAR(vv.f32()[0], 0.9 * 1.0 + 0.1 * 138.0 / 7.0, 1e-5);
  EXPECT_NEAR(vv.f32()[1], 0.9 * 2.0 + 0.1 * 138.0 / 7.0, 1e-5);
  ex.run();  // a second step folds the same batch in again
  EXPECT_NEAR(mv.f32()[0], 0.9 * (0.9 + 0.55) + 0.55, 1e-5);
}

TEST(BatchNorm, UpdateMovingMatchesTheDirectLoopOnRandomData) {
  Graph g;
  GraphBuilder gb(g);
  const Tensor xv = random_tensor({5, 3, 4, 4}, 11, -1.0f, 4.0f);
  Value x = gb.input("x", xv.shape());
  Value mean = gb.parameter("m", {3}), var = gb.parameter("v", {3});
  const std::vector<Value> updates = gb.batch_norm_update(x, mean, var, 0.7f);
  Tensor mv = random_tensor({3}, 12), vv = random_tensor({3}, 13, 0.5f, 1.5f);
  const Tensor m0 = mv.clone(), v0 = vv.clone();
  run_graph(g, {updates[0].id, updates[1].id}, {{x.id, xv}, {mean.id, mv}, {var.id, vv}});
  const ChannelStats s = channel_stats(xv, 1);  // unbiased
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(mv.f32()[c], 0.7 * m0.f32()[c] + 0.3 * s.mean[c], 1e-5) << "channel " << c;
    EXPECT_NEAR(vv.f32()[c], 0.7 * v0.f32()[c] + 0.3 * s.var[c], 1e-5) << "channel " << c;
  }
}

TEST(BatchNorm, UpdateNodesAreInPlaceSinksOnTheMovingParameters) {
  Graph g;
  GraphBuilder gb(g);
  gb.push_scope("bn1");
  Value x = gb.input("x", {4, 3, 2, 2});
  Value gamma = gb.parameter("gamma", {3}), beta = gb.parameter("beta", {3});
  Value mean = gb.parameter("moving_mean", {3}), var = gb.parameter("moving_variance", {3});
  gb.batch_norm(x, gamma, beta, mean, var, true);
  const std::vector<Value> updates = gb.batch_norm_update(x, mean, var);
  const auto consumers = g.consumers();
  for (size_t i = 0; i < updates.size(); ++i) {
    const Node& n = g.node(updates[i].id);
    EXPECT_EQ(n.op, "BatchNormUpdateMoving");
    EXPECT_EQ(n.def->inplace_input, 0);
    EXPECT_EQ(n.inputs[0], (i == 0 ? mean : var).id);
    EXPECT_EQ(n.attrs.get_str("which"), i == 0 ? "mean" : "variance");
    EXPECT_TRUE(consumers[n.id].empty());
    EXPECT_THAT(n.name, ::testing::StartsWith("bn1/BatchNormUpdateMoving"));
  }
}

TEST(BatchNorm, UpdateRefusesANonParameterAndASingleValuePerChannel) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {4, 3}), one = gb.input("one", {1, 3});
  Value not_param = gb.input("m", {3}), var = gb.parameter("v", {3});
  EXPECT_THROW(gb.op("BatchNormUpdateMoving", {not_param, x}, {{"which", std::string("mean")}}), InvalidArgument);
  EXPECT_THROW(gb.op("BatchNormUpdateMoving", {var, one}, {{"which", std::string("variance")}}), ShapeError);
  EXPECT_NO_THROW(gb.op("BatchNormUpdateMoving", {var, one}, {{"which", std::string("mean")}}));
  EXPECT_THROW(gb.op("BatchNormUpdateMoving", {var, x}, {{"which", std::string("std")}}), InvalidArgument);
}

TEST(BatchNorm, ChannelVectorOfTheWrongSizeNamesIt) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 4, 3, 3});
  Value ok = gb.parameter("ok", {4}), bad = gb.parameter("bad", {3});
  EXPECT_THAT([&] { gb.batch_norm(x, ok, bad, ok, ok, true); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("beta")));
}

TEST(BatchNorm, ConvBatchNormResidualGradientsMatchFiniteDifferences) {
  // out = BatchNorm(conv(x, w)) + x, training mode: the block of a ResNet without its ReLUs.
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {3, 2, 4, 4}), w = gb.parameter("w", {2, 2, 3, 3});
  Value gamma = gb.parameter("gamma", {2}), beta = gb.parameter("beta", {2});
  Value mean = gb.parameter("mean", {2}), var = gb.parameter("var", {2});
  Value out = gb.add(gb.batch_norm(gb.conv2d(x, w, 1, 1), gamma, beta, mean, var, true), x);
  optest::GradCheckOptions opt;
  opt.eps = 2e-3f;
  EXPECT_TRUE(check_gradients(g, out.id,
                              {{x.id, random_tensor({3, 2, 4, 4}, 1)},
                               {w.id, random_tensor({2, 2, 3, 3}, 2)},
                               {gamma.id, random_tensor({2}, 3, 0.5f, 1.5f)},
                               {beta.id, random_tensor({2}, 4)},
                               {mean.id, Tensor::zeros({2})},
                               {var.id, Tensor::full({2}, 1.0f)}},
                              {x.id, w.id, gamma.id, beta.id}, opt));
}

}  // namespace
}  // namespace sf
