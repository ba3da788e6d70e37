// Conv2D and its gradients (Conv2DBackpropInput, Conv2DBackpropFilter): values against a
// direct six-deep loop over several geometries (stride 2, pad 1, 1x1 kernels, non-square
// inputs and kernels), finite-difference gradients for x and w, a residual block
// (conv, conv, Add with the block's input), and shape errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::random_tensor;
using optest::run_graph;

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, stride, pad;
  std::string name() const {
    return fmt::format("n{}c{}h{}w{}_o{}k{}x{}_s{}p{}", n, c, h, w, o, kh, kw, stride, pad);
  }
};

// out[n,o,i,j] = sum over c, ki, kj of x[n, c, i*s - p + ki, j*s - p + kj] w[o,c,ki,kj], 0 off the image.
Tensor naive_conv(const Tensor& x, const Tensor& w, int64_t s, int64_t p) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t o = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  const int64_t oh = (h + 2 * p - kh) / s + 1, ow = (wd + 2 * p - kw) / s + 1;
  Tensor out({n, o, oh, ow});
  for (int64_t b = 0; b < n; ++b)
    for (int64_t f = 0; f < o; ++f)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = 0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t ki = 0; ki < kh; ++ki)
              for (int64_t kj = 0; kj < kw; ++kj) {
                const int64_t ih = i * s - p + ki, iw = j * s - p + kj;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                acc += x.f32()[((b * c + ch) * h + ih) * wd + iw] * w.f32()[((f * c + ch) * kh + ki) * kw + kj];
              }
          out.f32()[((b * o + f) * oh + i) * ow + j] = static_cast<float>(acc);
        }
  return out;
}

class Conv2DTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(Conv2DTest, MatchesDirectLoop) {
  const ConvCase k = GetParam();
  const Tensor x = random_tensor({k.n, k.c, k.h, k.w}, 1), w = random_tensor({k.o, k.c, k.kh, k.kw}, 2);
  Graph g;
  GraphBuilder gb(g);
  Value vx = gb.input("x", x.shape()), vw = gb.parameter("w", w.shape());
  Value y = gb.conv2d(vx, vw, k.stride, k.pad);
  const Tensor want = naive_conv(x, w, k.stride, k.pad);
  ASSERT_EQ(gb.shape(y), want.shape());
  const Tensor got = run_graph(g, {y.id}, {{vx.id, x}, {vw.id, w}})[0];
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.f32()[i], want.f32()[i], 1e-4) << "element " << i;
}

TEST_P(Conv2DTest, GradientsMatchFiniteDifferences) {
  const ConvCase k = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {k.n, k.c, k.h, k.w}), w = gb.parameter("w", {k.o, k.c, k.kh, k.kw});
  Value y = gb.conv2d(x, w, k.stride, k.pad);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor(gb.shape(x), 3)}, {w.id, random_tensor(gb.shape(w), 4)}},
                              {x.id, w.id}));
}

INSTANTIATE_TEST_SUITE_P(Geometries, Conv2DTest,
                         ::testing::Values(ConvCase{2, 3, 5, 5, 4, 3, 3, 1, 1},   // "same" 3x3
                                           ConvCase{2, 3, 7, 6, 2, 3, 3, 2, 1},   // stride 2, non-square
                                           ConvCase{2, 2, 8, 8, 3, 3, 3, 2, 1},   // H = 8 and 7 both give OH 4
                                           ConvCase{1, 4, 5, 5, 3, 1, 1, 1, 0},   // 1x1: no im2col
                                           ConvCase{2, 3, 6, 5, 2, 1, 1, 2, 0},   // 1x1 projection, stride 2
                                           ConvCase{1, 2, 5, 7, 2, 2, 3, 1, 0},   // non-square kernel
                                           ConvCase{2, 2, 4, 5, 3, 2, 3, 2, 1},   // non-square kernel, s2 p1
                                           ConvCase{1, 1, 4, 4, 2, 4, 4, 1, 0},   // kernel covers the image
                                           ConvCase{1, 2, 3, 3, 2, 3, 3, 1, 2}),  // pad wider than the kernel's half
                         [](const auto& info) { return info.param.name(); });

TEST(Conv2D, BackpropInputRecoversTheOddInputSize) {
  // With stride 2, a 7x7 and an 8x8 input both give 4x4: the gradient's shape comes from the attr.
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {1, 2, 7, 7}), w = gb.parameter("w", {3, 2, 3, 3});
  Value y = gb.conv2d(x, w, 2, 1);
  EXPECT_EQ(gb.shape(y), (Shape{1, 3, 4, 4}));
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({1, 2, 7, 7}, 5)}, {w.id, random_tensor({3, 2, 3, 3}, 6)}},
                              {x.id}));
}

TEST(Conv2D, ResidualBlockGradientsMatchFiniteDifferences) {
  // out = conv(conv(x, w1), w2) + x: Add with same-shape inputs, its gradient reaching x twice.
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 3, 5, 5});
  Value w1 = gb.parameter("w1", {3, 3, 3, 3}), w2 = gb.parameter("w2", {3, 3, 3, 3});
  Value out = gb.add(gb.conv2d(gb.conv2d(x, w1, 1, 1), w2, 1, 1), x);
  ASSERT_EQ(gb.shape(out), (Shape{2, 3, 5, 5}));
  EXPECT_TRUE(check_gradients(g, out.id,
                              {{x.id, random_tensor({2, 3, 5, 5}, 7)},
                               {w1.id, random_tensor({3, 3, 3, 3}, 8, -0.4f, 0.4f)},
                               {w2.id, random_tensor({3, 3, 3, 3}, 9, -0.4f, 0.4f)}},
                              {x.id, w1.id, w2.id}));
}

TEST(Conv2D, GradientOpsAreTheMindSporeOnesWithTheForwardAttrs) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {1, 2, 6, 6}), w = gb.parameter("w", {4, 2, 3, 3});
  Value y = gb.conv2d(x, w, 2, 1);
  gradients(g, gb.reduce_sum(y).id, {x.id, w.id});
  int input_grads = 0, filter_grads = 0;
  for (const Node& n : g.nodes()) {
    if (n.op == "Conv2DBackpropInput") {
      ++input_grads;
      EXPECT_EQ(n.attrs.get_ints("input_size"), (std::vector<int64_t>{1, 2, 6, 6}));
      EXPECT_EQ(n.attrs.get_int("stride"), 2);
      EXPECT_EQ(n.attrs.get_int("pad"), 1);
    }
    if (n.op == "Conv2DBackpropFilter") {
      ++filter_grads;
      EXPECT_EQ(n.attrs.get_ints("filter_size"), (std::vector<int64_t>{4, 2, 3, 3}));
    }
  }
  EXPECT_EQ(input_grads, 1);
  EXPECT_EQ(filter_grads, 1);
}

TEST(Conv2D, ChannelMismatchNamesNodeAndShapes) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {8, 3, 28, 28}), w = gb.parameter("w", {16, 1, 3, 3});
  EXPECT_THAT([&] { gb.op("Conv2D", {x, w}, {{"pad", int64_t{1}}}, "conv1/Conv2D"); },
              ::testing::ThrowsMessage<ShapeError>(::testing::AllOf(
                  ::testing::HasSubstr("conv1/Conv2D"), ::testing::HasSubstr("(8, 3, 28, 28)"),
                  ::testing::HasSubstr("(16, 1, 3, 3)"))));
}

TEST(Conv2D, RefusesKernelLargerThanPaddedInputAndGroups) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {1, 1, 2, 2}), w = gb.parameter("w", {1, 1, 3, 3});
  EXPECT_THROW(gb.conv2d(x, w, 1, 0), ShapeError);
  EXPECT_NO_THROW(gb.conv2d(x, w, 1, 1));
  EXPECT_THROW(gb.op("Conv2D", {x, w}, {{"pad", int64_t{1}}, {"group", int64_t{2}}}), InvalidArgument);
  EXPECT_THROW(gb.conv2d(x, w, 0, 1), InvalidArgument);
}

}  // namespace
}  // namespace sf
