// SoftmaxCrossEntropy and MSELoss: values computed by hand, label checks at build and run time,
// and gradients (logits only for cross-entropy; both inputs for MSE).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/executor.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::random_tensor;
using optest::run_graph;

TEST(SoftmaxCrossEntropy, MatchesHandComputed2x3) {
  Graph g;
  GraphBuilder gb(g);
  Value logits = gb.input("logits", {2, 3}), labels = gb.input("labels", {2}, DType::kI32);
  Value loss = gb.softmax_cross_entropy(logits, labels);
  ASSERT_EQ(gb.shape(loss), (Shape{}));
  Value dlogits = gb.op("SoftmaxCrossEntropyGrad", {logits, labels, gb.fill({}, 1.0f)});
  const auto out = run_graph(g, {loss.id, dlogits.id},
                             {{logits.id, floats({2, 3}, {1.f, 2.f, 3.f, 1.f, 1.f, 1.f})},
                              {labels.id, Tensor::from_vector({2}, std::vector<int32_t>{2, 0})}});
  // row 0: log(e + e^2 + e^3) - 3 = log(1 + e^-1 + e^-2) = 0.407606; row 1: log 3 = 1.098612.
  EXPECT_NEAR(out[0].item(), 0.7531091f, 1e-6);
  // (softmax - onehot) / N; softmax of (1, 2, 3) = (0.0900306, 0.2447285, 0.6652410).
  const std::vector<float> want{0.0900306f / 2, 0.2447285f / 2, (0.6652410f - 1) / 2, (1.f / 3 - 1) / 2, 1.f / 6, 1.f / 6};
  const std::vector<float> got = out[1].to_vector();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
}

TEST(SoftmaxCrossEntropy, IsStableForLargeLogits) {
  Graph g;
  GraphBuilder gb(g);
  Value logits = gb.input("logits", {1, 2}), labels = gb.input("labels", {1}, DType::kI32);
  Value loss = gb.softmax_cross_entropy(logits, labels);
  const float v = run_graph(g, {loss.id}, {{logits.id, floats({1, 2}, {1000.f, 0.f})},
                                           {labels.id, Tensor::from_vector({1}, std::vector<int32_t>{1})}})[0]
                      .item();
  EXPECT_NEAR(v, 1000.0f, 1e-3);
}

TEST(SoftmaxCrossEntropy, RefusesF32Labels) {
  Graph g;
  GraphBuilder gb(g);
  Value logits = gb.input("logits", {32, 10}), labels = gb.input("labels", {32});
  EXPECT_THAT([&] { gb.op("SoftmaxCrossEntropy", {logits, labels}, {}, "loss"); },
              ::testing::ThrowsMessage<ShapeError>(
                  ::testing::HasSubstr("SoftmaxCrossEntropy 'loss': labels must be i32, got f32(32,)")));
}

TEST(SoftmaxCrossEntropy, RefusesLabelsOfWrongLength) {
  Graph g;
  GraphBuilder gb(g);
  Value logits = gb.input("logits", {32, 10}), labels = gb.input("labels", {31}, DType::kI32);
  EXPECT_THROW(gb.softmax_cross_entropy(logits, labels), ShapeError);
}

TEST(SoftmaxCrossEntropy, RefusesOutOfRangeLabelAtRun) {
  Graph g;
  GraphBuilder gb(g);
  Value logits = gb.input("logits", {3, 4}), labels = gb.input("labels", {3}, DType::kI32);
  Value loss = gb.op("SoftmaxCrossEntropy", {logits, labels}, {}, "loss");
  const Tensor x = random_tensor({3, 4}, 1);
  for (int32_t bad : {4, -1}) {
    const Tensor l = Tensor::from_vector({3}, std::vector<int32_t>{0, bad, 2});
    EXPECT_THAT([&] { run_graph(g, {loss.id}, {{logits.id, x}, {labels.id, l}}); },
                ::testing::ThrowsMessage<InvalidArgument>(::testing::AllOf(
                    ::testing::HasSubstr("'loss'"), ::testing::HasSubstr(fmt::format("label {} of row 1", bad)))));
  }
}

TEST(SoftmaxCrossEntropy, GradientsMatchFiniteDifferences) {
  Graph g;
  GraphBuilder gb(g);
  Value logits = gb.parameter("logits", {4, 5}), labels = gb.input("labels", {4}, DType::kI32);
  Value loss = gb.softmax_cross_entropy(logits, labels);
  EXPECT_TRUE(check_gradients(g, loss.id,
                              {{logits.id, random_tensor({4, 5}, 1, -2.f, 2.f)},
                               {labels.id, Tensor::from_vector({4}, std::vector<int32_t>{0, 4, 2, 2})}},
                              {logits.id}));
}

TEST(SoftmaxCrossEntropy, LabelsGetNoGradient) {
  Graph g;
  GraphBuilder gb(g);
  Value logits = gb.parameter("logits", {2, 3}), labels = gb.input("labels", {2}, DType::kI32);
  Value loss = gb.softmax_cross_entropy(logits, labels);
  const std::vector<int> grads = gradients(g, loss.id, {logits.id, labels.id});
  EXPECT_EQ(g.node(grads[0]).op, "SoftmaxCrossEntropyGrad");
  EXPECT_EQ(g.node(grads[1]).op, "Fill");  // no rule output: autodiff fills zeros
}

TEST(MSELoss, MatchesHandComputed) {
  Graph g;
  GraphBuilder gb(g);
  Value p = gb.input("pred", {3}), t = gb.input("target", {3});
  Value loss = gb.mse_loss(p, t);
  const float v = run_graph(g, {loss.id}, {{p.id, floats({3}, {1.f, 2.f, 3.f})},
                                           {t.id, floats({3}, {1.f, 0.f, 0.f})}})[0]
                      .item();
  EXPECT_NEAR(v, 13.0f / 3, 1e-6);  // (0 + 4 + 9) / 3
}

TEST(MSELoss, RefusesDifferentShapes) {
  Graph g;
  GraphBuilder gb(g);
  Value p = gb.input("pred", {3}), t = gb.input("target", {3, 1});
  EXPECT_THAT([&] { gb.mse_loss(p, t); }, ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("(3, 1)")));
}

TEST(MSELoss, GradientsMatchFiniteDifferencesForBothInputs) {
  Graph g;
  GraphBuilder gb(g);
  Value p = gb.parameter("pred", {3, 4}), t = gb.parameter("target", {3, 4});
  Value loss = gb.mse_loss(p, t);
  EXPECT_TRUE(check_gradients(g, loss.id, {{p.id, random_tensor({3, 4}, 1)}, {t.id, random_tensor({3, 4}, 2)}},
                              {p.id, t.id}));
}

}  // namespace
}  // namespace sf
