// MatMul: values against a naive triple loop, gradients for all four transpose combinations,
// and the errors for mismatched inner dimensions and for huge shapes and names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::random_tensor;
using optest::run_graph;

Tensor transposed(const Tensor& t) {
  const int64_t r = t.dim(0), c = t.dim(1);
  Tensor out({c, r});
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out.f32()[j * r + i] = t.f32()[i * c + j];
  return out;
}

class MatMulTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MatMulTest, MatchesNaiveLoop) {
  const auto [ta, tb] = GetParam();
  const int64_t m = 3, k = 4, n = 5;
  const Tensor a = random_tensor({m, k}, 1), b = random_tensor({k, n}, 2);
  Graph g;
  GraphBuilder gb(g);
  Value va = gb.input("a", ta ? Shape{k, m} : Shape{m, k});
  Value vb = gb.input("b", tb ? Shape{n, k} : Shape{k, n});
  Value c = gb.matmul(va, vb, ta, tb);
  const Tensor got = run_graph(g, {c.id}, {{va.id, ta ? transposed(a) : a}, {vb.id, tb ? transposed(b) : b}})[0];
  ASSERT_EQ(got.shape(), (Shape{m, n}));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t p = 0; p < k; ++p) want += a.f32()[i * k + p] * b.f32()[p * n + j];
      EXPECT_NEAR(got.f32()[i * n + j], want, 1e-5) << "at (" << i << ", " << j << ")";
    }
}

TEST_P(MatMulTest, GradientsMatchFiniteDifferences) {
  const auto [ta, tb] = GetParam();
  const Shape sa = ta ? Shape{4, 3} : Shape{3, 4}, sb = tb ? Shape{5, 4} : Shape{4, 5};
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.parameter("a", sa), b = gb.parameter("b", sb);
  Value c = gb.matmul(a, b, ta, tb);
  EXPECT_TRUE(check_gradients(g, c.id, {{a.id, random_tensor(sa, 3)}, {b.id, random_tensor(sb, 4)}}, {a.id, b.id}));
}

INSTANTIATE_TEST_SUITE_P(Transposes, MatMulTest, ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return fmt::format("ta{}_tb{}", int{std::get<0>(info.param)},
                                              int{std::get<1>(info.param)});
                         });

TEST(MatMul, InnerDimensionMismatchNamesNodeAndShapes) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("x", {32, 784}), b = gb.parameter("w", {512, 700});
  EXPECT_THAT([&] { gb.op("MatMul", {a, b}, {{"transpose_b", int64_t{1}}}, "fc1/MatMul"); },
              ::testing::ThrowsMessage<ShapeError>(::testing::AllOf(
                  ::testing::HasSubstr("fc1/MatMul"), ::testing::HasSubstr("(32, 784)"),
                  ::testing::HasSubstr("(512, 700)"))));
}

// A 10,000-dim input and a 1 MB node name with newlines: the error is one line under 400
// bytes that still names the op, the node (by its head) and the rule, with the shape's head.
TEST(MatMul, AHugeShapeAndNameGiveAShortOneLineError) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("x", Shape(10000, 1)), b = gb.parameter("w", {4, 4});
  std::string name;
  while (name.size() < (1u << 20)) name += "fc\n";
  try {
    gb.op("MatMul", {a, b}, {}, name);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos);
    EXPECT_LT(m.size(), 400u) << m;
    EXPECT_THAT(m, ::testing::StartsWith("MatMul 'fc\\nfc\\n")) << m;
    EXPECT_THAT(m, ::testing::HasSubstr("inputs must be 2-D, got (1, 1, 1, 1, 1, 1, 1, 1, ... 9992 more) and (4, 4)"))
        << m;
  }
}

}  // namespace
}  // namespace sf
