// MaxPool, AvgPool and their gradients: values against direct window loops (padding, stride
// smaller or larger than the window, non-square inputs), finite-difference gradients, ties
// going to the first maximum, AvgPool counting the padding, and global average pooling.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::random_tensor;
using optest::run_graph;

struct PoolCase {
  Shape x;
  int64_t k, s, p;
  std::string name() const { return fmt::format("n{}c{}h{}w{}_k{}s{}p{}", x[0], x[1], x[2], x[3], k, s, p); }
};

// Max (or sum / k^2) over the in-bounds part of each window.
Tensor naive_pool(const Tensor& x, int64_t k, int64_t s, int64_t p, bool max) {
  const int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t oh = (h + 2 * p - k) / s + 1, ow = (w + 2 * p - k) / s + 1;
  Tensor out({x.dim(0), x.dim(1), oh, ow});
  float* o = out.f32();
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t a = 0; a < k; ++a)
          for (int64_t b = 0; b < k; ++b) {
            const int64_t r = i * s - p + a, c = j * s - p + b;
            if (r < 0 || r >= h || c < 0 || c >= w) continue;
            const double v = x.f32()[(pl * h + r) * w + c];
            acc = max ? std::max(acc, v) : acc + v;
          }
        *o++ = static_cast<float>(max ? acc : acc / static_cast<double>(k * k));
      }
  return out;
}

// Distinct values 0.01 apart in shuffled order, centred on 0: no two elements of a window are
// within a finite-difference step (1e-3) of each other, so the argmax cannot flip while it is
// probed, and the loss stays small enough for f32 to resolve the step.
Tensor distinct_values(const Shape& shape, unsigned seed) {
  Tensor t(shape);
  std::vector<int> order(static_cast<size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  const float centre = 0.5f * static_cast<float>(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = 0.01f * (static_cast<float>(order[i]) - centre);
  return t;
}

class PoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolTest, MaxPoolMatchesDirectLoop) {
  const PoolCase c = GetParam();
  const Tensor x = random_tensor(c.x, 1);
  Graph g;
  GraphBuilder gb(g);
  Value vx = gb.input("x", c.x);
  Value y = gb.max_pool(vx, c.k, c.s, c.p);
  const Tensor want = naive_pool(x, c.k, c.s, c.p, true);
  ASSERT_EQ(gb.shape(y), want.shape());
  EXPECT_EQ(run_graph(g, {y.id}, {{vx.id, x}})[0].to_vector(), want.to_vector());
}

TEST_P(PoolTest, AvgPoolMatchesDirectLoop) {
  const PoolCase c = GetParam();
  const Tensor x = random_tensor(c.x, 2);
  Graph g;
  GraphBuilder gb(g);
  Value vx = gb.input("x", c.x);
  Value y = gb.avg_pool(vx, c.k, c.s, c.p);
  const Tensor want = naive_pool(x, c.k, c.s, c.p, false);
  ASSERT_EQ(gb.shape(y), want.shape());
  const Tensor got = run_graph(g, {y.id}, {{vx.id, x}})[0];
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.f32()[i], want.f32()[i], 1e-5) << "element " << i;
}

TEST_P(PoolTest, MaxPoolGradientMatchesFiniteDifferences) {
  const PoolCase c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", c.x);
  Value y = gb.max_pool(x, c.k, c.s, c.p);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, distinct_values(c.x, 3)}}, {x.id}));
}

TEST_P(PoolTest, AvgPoolGradientMatchesFiniteDifferences) {
  const PoolCase c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", c.x);
  Value y = gb.avg_pool(x, c.k, c.s, c.p);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor(c.x, 4)}}, {x.id}));
}

INSTANTIATE_TEST_SUITE_P(Windows, PoolTest,
                         ::testing::Values(PoolCase{{2, 3, 4, 4}, 2, 2, 0},   // the classic 2x2/2
                                           PoolCase{{1, 2, 7, 7}, 3, 2, 1},   // ResNet stem pooling
                                           PoolCase{{2, 2, 5, 6}, 3, 1, 1},   // overlapping, non-square
                                           PoolCase{{1, 1, 3, 5}, 2, 1, 0},   // overlapping, no pad
                                           PoolCase{{1, 2, 7, 8}, 3, 3, 0},   // leftover rows dropped
                                           PoolCase{{1, 2, 6, 5}, 2, 2, 1},   // pad = kernel / 2
                                           PoolCase{{2, 1, 3, 3}, 1, 1, 0}),  // identity
                         [](const auto& info) { return info.param.name(); });

TEST(MaxPool, TiesGoToTheFirstMaximumOfEachWindow) {
  // All equal: each window's gradient lands on its top-left in-bounds element.
  Graph g;
  GraphBuilder gb(g);
  Value d = gb.input("dout", {1, 1, 1, 2}), x = gb.input("x", {1, 1, 2, 4});
  Value dx = gb.op("MaxPoolGrad", {d, x}, {{"kernel", int64_t{2}}, {"stride", int64_t{2}}, {"pad", int64_t{0}}});
  EXPECT_EQ(run_graph(g, {dx.id}, {{d.id, floats({1, 1, 1, 2}, {5.f, 7.f})}, {x.id, Tensor::full({1, 1, 2, 4}, 1.f)}})[0]
                .to_vector(),
            (std::vector<float>{5, 0, 7, 0, 0, 0, 0, 0}));
}

TEST(MaxPool, TiesInOverlappingPaddedWindowsAccumulateDeterministically) {
  // 3x3 windows, stride 1, pad 1 on the 2x3 image  2 2 2 / 2 3 2: all six windows hold the 3,
  // so all of dout sums onto it. Then an all-equal image: each window's gradient goes to the
  // first in-bounds element of its clipped window.
  Graph g;
  GraphBuilder gb(g);
  Value d = gb.input("dout", {1, 1, 2, 3}), x = gb.input("x", {1, 1, 2, 3});
  const Attrs attrs{{"kernel", int64_t{3}}, {"stride", int64_t{1}}, {"pad", int64_t{1}}};
  Value dx = gb.op("MaxPoolGrad", {d, x}, attrs);
  const Tensor dout = floats({1, 1, 2, 3}, {1, 2, 4, 8, 16, 32});
  EXPECT_EQ(run_graph(g, {dx.id}, {{d.id, dout}, {x.id, floats({1, 1, 2, 3}, {2, 2, 2, 2, 3, 2})}})[0].to_vector(),
            (std::vector<float>{0, 0, 0, 0, 63, 0}));
  // Windows (clipped) start at: (0,0) for outputs (0,0),(0,1),(1,0),(1,1); (0,1) for (0,2),(1,2).
  EXPECT_EQ(run_graph(g, {dx.id}, {{d.id, dout}, {x.id, Tensor::full({1, 1, 2, 3}, 1.f)}})[0].to_vector(),
            (std::vector<float>{1 + 2 + 8 + 16, 4 + 32, 0, 0, 0, 0}));
}

TEST(AvgPool, CountsThePaddingInTheDivisor) {
  // count_include_pad=True: a corner window of a 3x3 image with pad 1 holds 4 pixels, /9.
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {1, 1, 3, 3});
  Value y = gb.avg_pool(x, 3, 1, 1);
  const std::vector<float> got = run_graph(g, {y.id}, {{x.id, Tensor::full({1, 1, 3, 3}, 9.f)}})[0].to_vector();
  EXPECT_EQ(got, (std::vector<float>{4, 6, 4, 6, 9, 6, 4, 6, 4}));
}

TEST(GlobalAvgPool, IsTheMeanOverHeightAndWidth) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 3, 4, 5});
  Value y = gb.global_avg_pool(x);
  ASSERT_EQ(gb.shape(y), (Shape{2, 3}));
  EXPECT_EQ(g.node(y.id).op, "ReduceMean");
  const Tensor xv = random_tensor({2, 3, 4, 5}, 9);
  const Tensor got = run_graph(g, {y.id}, {{x.id, xv}})[0];
  for (int64_t p = 0; p < 6; ++p) {
    double s = 0;
    for (int64_t k = 0; k < 20; ++k) s += xv.f32()[p * 20 + k];
    EXPECT_NEAR(got.f32()[p], s / 20, 1e-6) << "plane " << p;
  }
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, xv}}, {x.id}));
}

TEST(Pool, RefusesPaddingOverHalfTheKernel) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {1, 1, 6, 6});
  EXPECT_THAT([&] { gb.max_pool(x, 2, 2, 2); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("pad <= kernel / 2")));
  EXPECT_THROW(gb.avg_pool(x, 0, 1, 0), InvalidArgument);
  EXPECT_THROW(gb.max_pool(gb.input("flat", {2, 6}), 2, 2, 0), ShapeError);
}

}  // namespace
}  // namespace sf
