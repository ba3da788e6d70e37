// GeLU and GeLUGrad: known values of both formulas (the tanh one that GPT-2 and MindSpore use,
// and the exact erf one), a reference loop over random tensors, finite-difference gradients on
// several shapes, and the refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::random_tensor;
using optest::run_graph;

// The formulas in double, written independently of the kernel's constants.
double gelu_tanh(double x) {
  const double pi = std::acos(-1.0);
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}
double gelu_exact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

std::vector<float> gelu_of(const std::vector<float>& xs, const std::string& approximate) {
  Graph g;
  GraphBuilder gb(g);
  const int64_t n = static_cast<int64_t>(xs.size());
  Value x = gb.input("x", {n});
  Value y = gb.gelu(x, approximate);
  return run_graph(g, {y.id}, {{x.id, floats({n}, xs)}})[0].to_vector();
}

TEST(GeLU, TanhFormulaAtKnownPoints) {
  // PyTorch's gelu(approximate='tanh') at these points, to double precision.
  const std::vector<float> got = gelu_of({-3.f, -1.f, -0.5f, 0.f, 0.5f, 1.f, 2.f}, "tanh");
  const std::vector<double> want{-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0.0,
                                 0.34571400982514394,    0.8411919906082768,   1.954597694087775};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "point " << i;
}

TEST(GeLU, ExactFormulaAtKnownPoints) {
  const std::vector<float> got = gelu_of({-3.f, -1.f, -0.5f, 0.f, 0.5f, 1.f, 2.f}, "none");
  const std::vector<double> want{-0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0.0,
                                 0.34573123063700656,  0.8413447460685429,   1.9544997361036416};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "point " << i;
}

TEST(GeLU, DefaultIsTheTanhFormula) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {1});
  Value y = gb.op("GeLU", {x});  // no attribute
  EXPECT_NEAR(run_graph(g, {y.id}, {{x.id, floats({1}, {1.f})}})[0].to_vector()[0], 0.8411919906082768, 1e-6);
}

TEST(GeLU, MatchesAReferenceLoopOnARank3Tensor) {
  const Shape shape{3, 4, 17};
  const Tensor xv = random_tensor(shape, 7, -5.0f, 5.0f);
  for (const char* approximate : {"tanh", "none"}) {
    Graph g;
    GraphBuilder gb(g);
    Value x = gb.input("x", shape);
    Value y = gb.gelu(x, approximate);
    const Tensor got = run_graph(g, {y.id}, {{x.id, xv}})[0];
    ASSERT_EQ(got.shape(), shape);
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double v = xv.f32()[i];
      ASSERT_NEAR(got.f32()[i], std::string(approximate) == "tanh" ? gelu_tanh(v) : gelu_exact(v), 2e-6)
          << approximate << " element " << i;
    }
  }
}

// The tanh form computes tanh by its own vectorisable formula (1 - 2 / (e^{2|u|} + 1)): over a
// dense sweep of x, GeLU is what the same formula gives with glibc's tanhf, which it replaced,
// up to 4 float ulps of tanh (|tanh| <= 1, so 0.5 |x| * 4 ulps of 1 in the output) and 4 ulps
// of the result.
TEST(GeLU, TanhFormIsWithinFloatRoundingOfTanhf) {
  std::vector<float> xs;
  for (int k = -24000; k <= 24000; ++k) xs.push_back(static_cast<float>(k) * 5e-4f);
  const Shape shape{static_cast<int64_t>(xs.size())};
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", shape);
  Value y = gb.gelu(x, "tanh");
  const Tensor got = run_graph(g, {y.id}, {{x.id, floats(shape, xs)}})[0];
  for (size_t i = 0; i < xs.size(); ++i) {
    const float v = xs[i];
    const float want = 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    ASSERT_LE(std::fabs(got.f32()[i] - want), 4 * 5.96e-8 * (std::fabs(want) + 0.5 * std::fabs(v)))
        << "x = " << v << ": " << got.f32()[i] << " against tanhf's " << want;
  }
}

TEST(GeLU, GradKernelIsDoutTimesTheDerivative) {
  // The derivative by central differences of the double formulas, at points where the two
  // formulas' derivatives differ by more than the tolerance.
  const std::vector<float> xs{-2.5f, -1.f, -0.3f, 0.f, 0.7f, 1.5f};
  const std::vector<float> douts{0.5f, -2.f, 1.f, 3.f, -1.f, 2.f};
  for (const char* approximate : {"tanh", "none"}) {
    Graph g;
    GraphBuilder gb(g);
    Value d = gb.input("dout", {6}), x = gb.input("x", {6});
    Value dx = gb.op("GeLUGrad", {d, x}, {{"approximate", std::string(approximate)}});
    const std::vector<float> got =
        run_graph(g, {dx.id}, {{d.id, floats({6}, douts)}, {x.id, floats({6}, xs)}})[0].to_vector();
    const bool tanh = std::string(approximate) == "tanh";
    for (size_t i = 0; i < xs.size(); ++i) {
      const double h = 1e-5, v = xs[i];
      const double slope =
          tanh ? (gelu_tanh(v + h) - gelu_tanh(v - h)) / (2 * h) : (gelu_exact(v + h) - gelu_exact(v - h)) / (2 * h);
      EXPECT_NEAR(got[i], douts[i] * slope, 1e-5) << approximate << " x = " << v;
    }
  }
}

struct GeluCase {
  Shape shape;
  std::string approximate;
};

void PrintTo(const GeluCase& c, std::ostream* os) {
  *os << fmt::format("({}) {}", fmt::join(c.shape, ", "), c.approximate);
}

class GeLUGradient : public ::testing::TestWithParam<GeluCase> {};

TEST_P(GeLUGradient, MatchesFiniteDifferences) {
  Graph g;
  GraphBuilder gb(g);
  const Shape& shape = GetParam().shape;
  Value x = gb.parameter("x", shape);
  Value y = gb.gelu(x, GetParam().approximate);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor(shape, 3, -3.0f, 3.0f)}}, {x.id}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GeLUGradient,
                         ::testing::Values(GeluCase{{7}, "tanh"}, GeluCase{{3, 5}, "tanh"}, GeluCase{{2, 3, 4}, "tanh"},
                                           GeluCase{{7}, "none"}, GeluCase{{3, 5}, "none"},
                                           GeluCase{{2, 3, 4}, "none"}),
                         [](const auto& info) {
                           return fmt::format("{}_{}", fmt::join(info.param.shape, "x"), info.param.approximate);
                         });

TEST(GeLU, GradientThroughAChainMatchesFiniteDifferences) {
  // gelu(x * w): the gradient reaches both factors through GeLUGrad and Mul.
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {4, 6}), w = gb.parameter("w", {6});
  Value y = gb.gelu(gb.mul(x, w), "none");
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({4, 6}, 1, -2.f, 2.f)}, {w.id, random_tensor({6}, 2)}},
                              {x.id, w.id}));
}

TEST(GeLU, BadInputsAreRefusedNamingTheNode) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});
  Value labels = gb.input("labels", {2, 3}, DType::kI32);
  EXPECT_THAT([&] { gb.op("GeLU", {labels}, {}, "act"); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("GeLU 'act': input must be f32")));
  EXPECT_THAT([&] { gb.gelu(x, "erf"); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::AllOf(::testing::HasSubstr("GeLU"),
                                                                         ::testing::HasSubstr("\"tanh\" or \"none\""),
                                                                         ::testing::HasSubstr("\"erf\""))));
  Value other = gb.input("other", {3, 2});
  EXPECT_THAT(
      [&] {
        gb.op("GeLUGrad", {other, x}, {}, "back");
      },
      ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("GeLUGrad 'back': dout and x")));
  EXPECT_THROW(gb.op("GeLUGrad", {x, x}, {{"approximate", std::string("fast")}}), InvalidArgument);
}

}  // namespace
}  // namespace sf
