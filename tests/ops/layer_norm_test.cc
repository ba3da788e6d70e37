// LayerNorm: values against a per-row loop in double for the transformer's case (last dim,
// gamma and beta of the hidden size) and for other begin_norm_axis / begin_params_axis pairs
// (gamma broadcast inside a row, gamma spanning several rows); finite-difference gradients for
// x, gamma and beta on each; the gradient kernels against the same loop; the refusals.
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

struct LnCase {
  Shape shape;
  int64_t norm_axis, params_axis;
};

void PrintTo(const LnCase& c, std::ostream* os) {
  *os << fmt::format("x ({}), begin_norm_axis {}, begin_params_axis {}", fmt::join(c.shape, ", "), c.norm_axis,
                     c.params_axis);
}

int64_t positive(int64_t a, size_t rank) { return a < 0 ? a + static_cast<int64_t>(rank) : a; }

Shape params_shape(const LnCase& c) {
  return Shape(c.shape.begin() + positive(c.params_axis, c.shape.size()), c.shape.end());
}

// y of LayerNorm, row by row in double: the mean and biased variance of each row of
// `d` = prod of the dims from norm_axis, gamma and beta read at flat index % their size.
Tensor reference_ln(const LnCase& c, const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  int64_t d = 1;
  for (size_t i = positive(c.norm_axis, c.shape.size()); i < c.shape.size(); ++i) d *= c.shape[i];
  const int64_t period = gamma.numel();
  Tensor out(x.shape());
  for (int64_t r = 0; r < x.numel() / d; ++r) {
    double mean = 0, var = 0;
    for (int64_t k = 0; k < d; ++k) mean += x.f32()[r * d + k];
    mean /= static_cast<double>(d);
    for (int64_t k = 0; k < d; ++k) var += (x.f32()[r * d + k] - mean) * (x.f32()[r * d + k] - mean);
    var /= static_cast<double>(d);
    for (int64_t k = 0; k < d; ++k) {
      const int64_t i = r * d + k;
      out.f32()[i] = static_cast<float>((x.f32()[i] - mean) / std::sqrt(var + eps) * gamma.f32()[i % period] +
                                        beta.f32()[i % period]);
    }
  }
  return out;
}

// A LayerNorm graph on x, gamma and beta bound to random tensors (x with an offset and spread,
// so that normalising really changes it).
struct LnGraph {
  Graph g;
  Value x, gamma, beta, y;
  std::vector<optest::Binding> bindings;

  explicit LnGraph(const LnCase& c, float eps = 1e-5f) {
    GraphBuilder gb(g);
    const Shape p = params_shape(c);
    x = gb.parameter("x", c.shape);
    gamma = gb.parameter("gamma", p);
    beta = gb.parameter("beta", p);
    y = gb.layer_norm(x, gamma, beta, c.norm_axis, c.params_axis, eps);
    bindings = {{x.id, random_tensor(c.shape, 1, -2.0f, 3.0f)},
                {gamma.id, random_tensor(p, 2, 0.5f, 1.5f)},
                {beta.id, random_tensor(p, 3)}};
  }
  const Tensor& value(Value v) const {
    for (const auto& b : bindings)
      if (b.id == v.id) return b.value;
    throw std::logic_error("unbound");
  }
};

class LayerNormTest : public ::testing::TestWithParam<LnCase> {};

TEST_P(LayerNormTest, MatchesAPerRowLoop) {
  LnGraph ln(GetParam());
  const Tensor got = run_graph(ln.g, {ln.y.id}, ln.bindings)[0];
  const Tensor want = reference_ln(GetParam(), ln.value(ln.x), ln.value(ln.gamma), ln.value(ln.beta), 1e-5);
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.f32()[i], want.f32()[i], 2e-5) << "element " << i;
}

TEST_P(LayerNormTest, GradientsMatchFiniteDifferences) {
  LnGraph ln(GetParam());
  optest::GradCheckOptions opt;
  // Moving one x moves its whole row through the statistics, so each f32 loss carries the
  // rounding of all of them (BatchNorm's reason): LayerNorm is smooth, a larger step is exact.
  opt.eps = 1e-2f;
  EXPECT_TRUE(check_gradients(ln.g, ln.y.id, ln.bindings, {ln.x.id, ln.gamma.id, ln.beta.id}, opt));
}

TEST_P(LayerNormTest, EachGradientAloneMatchesFiniteDifferences) {
  // Autodiff asks for one input's gradient at a time here: the rule must not need the others.
  for (int which = 0; which < 3; ++which) {
    LnGraph ln(GetParam());
    optest::GradCheckOptions opt;
    opt.eps = 1e-2f;
    const Value wrt = which == 0 ? ln.x : which == 1 ? ln.gamma : ln.beta;
    EXPECT_TRUE(check_gradients(ln.g, ln.y.id, ln.bindings, {wrt.id}, opt)) << "input " << which;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, LayerNormTest,
                         ::testing::Values(LnCase{{4, 6}, -1, -1}, LnCase{{2, 3, 8}, -1, -1}, LnCase{{3, 5, 16}, 2, 2},
                                           LnCase{{2, 3, 4}, 1, 1},   // gamma (3, 4): the whole row
                                           LnCase{{2, 3, 4}, 1, -1},  // gamma (4,) repeated inside each row of 12
                                           LnCase{{2, 3, 4}, 2, 1},   // gamma (3, 4) spanning three rows of 4
                                           LnCase{{2, 2, 3, 5}, -2, -1}, LnCase{{9}, 0, 0}),
                         [](const auto& info) {
                           auto axis = [](int64_t a) { return a < 0 ? fmt::format("m{}", -a) : fmt::format("{}", a); };
                           return fmt::format("{}_norm{}_params{}", fmt::join(info.param.shape, "x"),
                                              axis(info.param.norm_axis), axis(info.param.params_axis));
                         });

TEST(LayerNorm, NormalisesEachRowToMeanZeroVarianceOne) {
  // gamma 1, beta 0: each row of the output has mean 0 and (biased) variance 1 - eps/(var+eps).
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 4}), gamma = gb.input("gamma", {4}), beta = gb.input("beta", {4});
  Value y = gb.layer_norm(x, gamma, beta);
  const std::vector<float> got = run_graph(g, {y.id},
                                           {{x.id, floats({2, 4}, {1.f, 2.f, 3.f, 4.f, -10.f, 0.f, 10.f, 20.f})},
                                            {gamma.id, floats({4}, {1.f, 1.f, 1.f, 1.f})},
                                            {beta.id, floats({4}, {0.f, 0.f, 0.f, 0.f})}})[0]
                                     .to_vector();
  // Row 0: mean 2.5, variance 1.25.
  const double s0 = std::sqrt(1.25 + 1e-5);
  EXPECT_NEAR(got[0], -1.5 / s0, 1e-6);
  EXPECT_NEAR(got[3], 1.5 / s0, 1e-6);
  // Row 1: mean 5, variance 125.
  const double s1 = std::sqrt(125.0 + 1e-5);
  EXPECT_NEAR(got[4], -15.0 / s1, 1e-6);
  EXPECT_NEAR(got[7], 15.0 / s1, 1e-6);
}

TEST(LayerNorm, GradKernelsMatchTheFormulas) {
  // dx = rstd (g - mean(g) - x^ mean(g x^)), dgamma = sum dout x^, in double, on (3, 5).
  const LnCase c{{3, 5}, -1, -1};
  LnGraph ln(c);
  GraphBuilder gb(ln.g);
  Value dout = gb.input("dout", c.shape);
  Value dx = gb.op("LayerNormGrad", {dout, ln.x, ln.gamma});
  Value dgamma = gb.op("LayerNormGammaGrad", {dout, ln.x});
  std::vector<optest::Binding> b = ln.bindings;
  const Tensor dv = random_tensor(c.shape, 9);
  b.push_back({dout.id, dv});
  const std::vector<Tensor> got = run_graph(ln.g, {dx.id, dgamma.id}, b);
  const Tensor& xv = ln.value(ln.x);
  const Tensor& gv = ln.value(ln.gamma);
  std::vector<double> want_dgamma(5, 0.0);
  for (int r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int k = 0; k < 5; ++k) mean += xv.f32()[r * 5 + k] / 5.0;
    for (int k = 0; k < 5; ++k) var += (xv.f32()[r * 5 + k] - mean) * (xv.f32()[r * 5 + k] - mean) / 5.0;
    const double rstd = 1.0 / std::sqrt(var + 1e-5);
    double mg = 0, mgx = 0;
    for (int k = 0; k < 5; ++k) {
      const double g = dv.f32()[r * 5 + k] * gv.f32()[k], xh = (xv.f32()[r * 5 + k] - mean) * rstd;
      mg += g / 5.0;
      mgx += g * xh / 5.0;
      want_dgamma[k] += dv.f32()[r * 5 + k] * xh;
    }
    for (int k = 0; k < 5; ++k) {
      const double g = dv.f32()[r * 5 + k] * gv.f32()[k], xh = (xv.f32()[r * 5 + k] - mean) * rstd;
      EXPECT_NEAR(got[0].f32()[r * 5 + k], rstd * (g - mg - xh * mgx), 1e-5) << "dx " << r << "," << k;
    }
  }
  for (int k = 0; k < 5; ++k) EXPECT_NEAR(got[1].f32()[k], want_dgamma[k], 1e-5) << "dgamma " << k;
}

TEST(LayerNorm, GradientInsideAResidualBlockMatchesFiniteDifferences) {
  // out = gelu(LayerNorm(x) * w) + x, on (2, 3, 8): x's gradient has two paths.
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 3, 8}), gamma = gb.parameter("gamma", {8}), beta = gb.parameter("beta", {8});
  Value w = gb.parameter("w", {8});
  Value y = gb.add(gb.gelu(gb.mul(gb.layer_norm(x, gamma, beta), w)), x);
  optest::GradCheckOptions opt;
  opt.eps = 1e-2f;
  EXPECT_TRUE(check_gradients(g, y.id,
                              {{x.id, random_tensor({2, 3, 8}, 1, -2.f, 3.f)},
                               {gamma.id, random_tensor({8}, 2, 0.5f, 1.5f)},
                               {beta.id, random_tensor({8}, 3)},
                               {w.id, random_tensor({8}, 4)}},
                              {x.id, gamma.id, beta.id, w.id}, opt));
}

TEST(LayerNorm, BadInputsAreRefusedNamingTheNode) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3, 8});
  Value gamma = gb.input("gamma", {8}), beta = gb.input("beta", {8});
  Value wide = gb.input("wide", {3, 8});
  Value ints = gb.input("ints", {2, 3, 8}, DType::kI32);
  Value scalar = gb.input("scalar", {});
  auto message = [](const std::string& s) { return ::testing::HasSubstr(s); };
  EXPECT_THAT(
      [&] {
        gb.op("LayerNorm", {ints, gamma, beta}, {}, "ln");
      },
      ::testing::ThrowsMessage<ShapeError>(message("LayerNorm 'ln': x must be f32")));
  EXPECT_THAT(
      [&] {
        gb.op("LayerNorm", {scalar, gamma, beta}, {}, "ln0");
      },
      ::testing::ThrowsMessage<ShapeError>(message("LayerNorm 'ln0': x must be f32 of rank >= 1")));
  EXPECT_THAT(
      [&] {
        gb.op("LayerNorm", {x, wide, beta}, {}, "ln1");
      },
      ::testing::ThrowsMessage<ShapeError>(message("LayerNorm 'ln1': gamma must be f32 of shape (8,)")));
  EXPECT_THAT(
      [&] {
        gb.op("LayerNorm", {x, gamma, wide}, {}, "ln2");
      },
      ::testing::ThrowsMessage<ShapeError>(message("LayerNorm 'ln2': beta must be f32 of shape (8,)")));
  // begin_params_axis 1 wants gamma (3, 8).
  EXPECT_THAT(
      [&] {
        gb.op("LayerNorm", {x, gamma, beta}, {{"begin_params_axis", int64_t{1}}}, "ln3");
      },
      ::testing::ThrowsMessage<ShapeError>(message("gamma must be f32 of shape (3, 8)")));
  EXPECT_NO_THROW(gb.op("LayerNorm", {x, wide, wide}, {{"begin_params_axis", int64_t{1}}}));
  EXPECT_THAT(
      [&] {
        gb.op("LayerNorm", {x, gamma, beta}, {{"begin_norm_axis", int64_t{3}}}, "ln4");
      },
      ::testing::ThrowsMessage<ShapeError>(message("LayerNorm 'ln4': begin_norm_axis 3 out of range")));
  EXPECT_THAT(
      [&] {
        gb.op("LayerNorm", {x, gamma, beta}, {{"begin_params_axis", int64_t{-4}}}, "ln5");
      },
      ::testing::ThrowsMessage<ShapeError>(message("begin_params_axis -4 out of range")));
  EXPECT_THAT(
      [&] {
        gb.op("LayerNorm", {x, gamma, beta}, {{"epsilon", 0.0}}, "ln6");
      },
      ::testing::ThrowsMessage<InvalidArgument>(message("LayerNorm 'ln6': epsilon must be > 0")));
  EXPECT_THAT(
      [&] {
        gb.op("LayerNormGrad", {wide, x, gamma}, {}, "lng");
      },
      ::testing::ThrowsMessage<ShapeError>(message("LayerNormGrad 'lng': dout must be f32 of x's shape")));
  EXPECT_THAT(
      [&] {
        gb.op("LayerNormGammaGrad", {x, ints}, {}, "lngg");
      },
      ::testing::ThrowsMessage<ShapeError>(message("LayerNormGammaGrad 'lngg': x must be f32")));
}

}  // namespace
}  // namespace sf
