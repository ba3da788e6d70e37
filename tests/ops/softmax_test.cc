// Softmax and SoftmaxGrad: known values, large inputs that would overflow exp without the max
// subtracted, a reference loop along every axis of a rank-3 tensor (the last axis takes the
// row path, the others the slab path), finite-difference gradients, the refusals.
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

struct SoftmaxCase {
  Shape shape;
  int64_t axis;
};

void PrintTo(const SoftmaxCase& c, std::ostream* os) {
  *os << fmt::format("x ({}), axis {}", fmt::join(c.shape, ", "), c.axis);
}

std::string case_name(const SoftmaxCase& c) {
  return fmt::format("{}_axis{}", fmt::join(c.shape, "x"),
                     c.axis < 0 ? fmt::format("m{}", -c.axis) : fmt::format("{}", c.axis));
}

// (outer, n, inner) around the axis.
struct Around {
  int64_t outer = 1, n = 1, inner = 1;
};

Around around(const SoftmaxCase& c) {
  const int64_t r = static_cast<int64_t>(c.shape.size()), a = c.axis < 0 ? c.axis + r : c.axis;
  Around d;
  for (int64_t i = 0; i < r; ++i) (i < a ? d.outer : i == a ? d.n : d.inner) *= c.shape[i];
  return d;
}

Tensor reference_softmax(const SoftmaxCase& c, const Tensor& x) {
  const Around d = around(c);
  Tensor out(x.shape());
  for (int64_t o = 0; o < d.outer; ++o)
    for (int64_t in = 0; in < d.inner; ++in) {
      auto at = [&](int64_t k) { return (o * d.n + k) * d.inner + in; };
      double sum = 0;
      for (int64_t k = 0; k < d.n; ++k) sum += std::exp(static_cast<double>(x.f32()[at(k)]));
      for (int64_t k = 0; k < d.n; ++k) out.f32()[at(k)] = static_cast<float>(std::exp(x.f32()[at(k)]) / sum);
    }
  return out;
}

TEST(Softmax, KnownValues) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});
  Value y = gb.softmax(x);
  const std::vector<float> got =
      run_graph(g, {y.id}, {{x.id, floats({2, 3}, {1.f, 2.f, 3.f, 0.f, 0.f, 0.f})}})[0].to_vector();
  const std::vector<double> want{0.09003057317038046, 0.24472847105479764, 0.6652409557748219, 1 / 3., 1 / 3., 1 / 3.};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(Softmax, LargeInputsDoNotOverflow) {
  // exp(1000) is inf in float: without the row max subtracted this row would be NaN.
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {1, 3});
  Value y = gb.softmax(x);
  const std::vector<float> got =
      run_graph(g, {y.id}, {{x.id, floats({1, 3}, {1000.f, 1001.f, 1002.f})}})[0].to_vector();
  EXPECT_NEAR(got[0], 0.09003057317038046, 1e-6);
  EXPECT_NEAR(got[2], 0.6652409557748219, 1e-6);
}

class SoftmaxTest : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxTest, MatchesAReferenceLoop) {
  const SoftmaxCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", c.shape);
  Value y = gb.softmax(x, c.axis);
  const Tensor xv = random_tensor(c.shape, 4, -4.0f, 4.0f);
  const Tensor got = run_graph(g, {y.id}, {{x.id, xv}})[0];
  const Tensor want = reference_softmax(c, xv);
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.f32()[i], want.f32()[i], 1e-6) << "element " << i;
}

TEST_P(SoftmaxTest, GradientMatchesFiniteDifferences) {
  const SoftmaxCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", c.shape);
  Value y = gb.softmax(x, c.axis);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor(c.shape, 5, -2.0f, 2.0f)}}, {x.id}));
}

TEST_P(SoftmaxTest, GradKernelIsYTimesDoutMinusTheDot) {
  // dx = y (dout - sum(dout y)) along the axis, in double.
  const SoftmaxCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value d = gb.input("dout", c.shape), y = gb.input("y", c.shape);
  Value dx = gb.op("SoftmaxGrad", {d, y}, {{"axis", c.axis}});
  const Tensor dv = random_tensor(c.shape, 6), yv = random_tensor(c.shape, 7, 0.0f, 1.0f);
  const Tensor got = run_graph(g, {dx.id}, {{d.id, dv}, {y.id, yv}})[0];
  const Around a = around(c);
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t in = 0; in < a.inner; ++in) {
      auto at = [&](int64_t k) { return (o * a.n + k) * a.inner + in; };
      double dot = 0;
      for (int64_t k = 0; k < a.n; ++k) dot += static_cast<double>(dv.f32()[at(k)]) * yv.f32()[at(k)];
      for (int64_t k = 0; k < a.n; ++k)
        ASSERT_NEAR(got.f32()[at(k)], yv.f32()[at(k)] * (dv.f32()[at(k)] - dot), 1e-5) << "element " << at(k);
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxTest,
                         ::testing::Values(SoftmaxCase{{7}, -1}, SoftmaxCase{{4, 6}, -1}, SoftmaxCase{{4, 6}, 0},
                                           SoftmaxCase{{2, 3, 5}, -1}, SoftmaxCase{{2, 3, 5}, 1},
                                           SoftmaxCase{{2, 3, 5}, 0}, SoftmaxCase{{2, 2, 3, 33}, -1}),
                         [](const auto& info) { return case_name(info.param); });

TEST(Softmax, RowsSumToOne) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {5, 37});
  Value y = gb.softmax(x);
  const Tensor got = run_graph(g, {y.id}, {{x.id, random_tensor({5, 37}, 8, -10.f, 10.f)}})[0];
  for (int r = 0; r < 5; ++r) {
    double s = 0;
    for (int k = 0; k < 37; ++k) s += got.f32()[r * 37 + k];
    EXPECT_NEAR(s, 1.0, 1e-6) << "row " << r;
  }
}

TEST(Softmax, BadInputsAreRefusedNamingTheNode) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});
  Value ints = gb.input("ints", {2, 3}, DType::kI32);
  Value scalar = gb.input("scalar", {});
  Value other = gb.input("other", {3, 2});
  EXPECT_THAT([&] { gb.op("Softmax", {ints}, {}, "sm"); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("Softmax 'sm': input must be f32")));
  EXPECT_THAT(
      [&] { gb.op("Softmax", {scalar}, {}, "sm0"); },
      ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("Softmax 'sm0': input must be f32 of rank >= 1")));
  EXPECT_THAT(
      [&] {
        gb.op("Softmax", {x}, {{"axis", int64_t{2}}}, "sm1");
      },
      ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("Softmax 'sm1': axis 2 out of range")));
  EXPECT_THAT(
      [&] {
        gb.op("Softmax", {x}, {{"axis", int64_t{-3}}}, "sm2");
      },
      ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("axis -3 out of range")));
  EXPECT_THAT(
      [&] {
        gb.op("SoftmaxGrad", {other, x}, {}, "smg");
      },
      ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("SoftmaxGrad 'smg': dout and y")));
}

}  // namespace
}  // namespace sf
