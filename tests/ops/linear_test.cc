// Linear: values against MatMul on the flattened rows for ranks 1 to 4 and both weight layouts,
// the gradients of x and w by finite differences, and the refusals of mismatched shapes.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::random_tensor;
using optest::run_graph;

struct LinearCase {
  Shape x;
  int64_t n;
  bool transpose_b;
};

void PrintTo(const LinearCase& c, std::ostream* os) {
  *os << fmt::format("x ({}), n {}, transpose_b {}", fmt::join(c.x, ", "), c.n, c.transpose_b);
}

Shape weight_shape(const LinearCase& c) { return c.transpose_b ? Shape{c.n, c.x.back()} : Shape{c.x.back(), c.n}; }

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

// The same product through MatMul on x reshaped to (rows, k), reshaped back.
TEST_P(LinearTest, EqualsMatMulOnTheFlattenedRows) {
  const LinearCase& c = GetParam();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < c.x.size(); ++d) rows *= c.x[d];
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", c.x);
  Value w = gb.input("w", weight_shape(c));
  Value y = gb.linear(x, w, c.transpose_b);
  Value flat = gb.reshape(x, {rows, c.x.back()});
  Value z = gb.matmul(flat, w, false, c.transpose_b);
  Shape out = c.x;
  out.back() = c.n;
  EXPECT_EQ(gb.shape(y), out);
  const auto got = run_graph(g, {y.id, z.id}, {{x.id, random_tensor(c.x, 1)}, {w.id, random_tensor(weight_shape(c), 2)}});
  EXPECT_EQ(got[0].to_vector(), got[1].to_vector());
}

TEST_P(LinearTest, GradientsMatchFiniteDifferences) {
  const LinearCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", c.x);
  Value w = gb.parameter("w", weight_shape(c));
  Value y = gb.linear(x, w, c.transpose_b);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor(c.x, 3)}, {w.id, random_tensor(weight_shape(c), 4)}},
                              {x.id, w.id}));
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearTest,
                         ::testing::Values(LinearCase{{5}, 3, true}, LinearCase{{4, 5}, 3, true},
                                           LinearCase{{4, 5}, 3, false}, LinearCase{{2, 3, 5}, 4, true},
                                           LinearCase{{2, 3, 5}, 4, false}, LinearCase{{2, 2, 3, 4}, 6, true}),
                         [](const auto& info) {
                           return fmt::format("{}_n{}_{}", fmt::join(info.param.x, "x"), info.param.n,
                                              info.param.transpose_b ? "wt" : "w");
                         });

TEST(Linear, KnownValues) {
  // x (1, 2, 2) = [[1, 2], [3, 4]], w (n=1, k=2) = [10, 1]: rows 1*10 + 2 and 3*10 + 4.
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {1, 2, 2});
  Value w = gb.input("w", {1, 2});
  Value y = gb.linear(x, w);
  const Tensor got = run_graph(g, {y.id}, {{x.id, Tensor::from_vector({1, 2, 2}, std::vector<float>{1, 2, 3, 4})},
                                           {w.id, Tensor::from_vector({1, 2}, std::vector<float>{10, 1})}})[0];
  EXPECT_EQ(got.shape(), (Shape{1, 2, 1}));
  EXPECT_EQ(got.to_vector(), (std::vector<float>{12, 34}));
}

TEST(Linear, RefusesAMismatchedInnerDim) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3, 5});
  Value w = gb.input("w", {4, 6});
  EXPECT_THROW(
      {
        try {
          gb.linear(x, w);
        } catch (const ShapeError& e) {
          EXPECT_NE(std::string(e.what()).find("x's last dim 5 differs from w's input dim 6"), std::string::npos)
              << e.what();
          throw;
        }
      },
      ShapeError);
  EXPECT_THROW(gb.linear(x, gb.input("v", {5})), ShapeError);
}

}  // namespace
}  // namespace sf
