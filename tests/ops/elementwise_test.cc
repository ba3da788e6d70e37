// Add, Sub, Mul: broadcasting values and errors, gradients with and without broadcasting, and
// that a same-shape gradient is passed through without a SumToShape node.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::iota;
using optest::random_tensor;
using optest::run_graph;

std::vector<float> eval(const std::string& op, const Shape& sa, const Tensor& a, const Shape& sb, const Tensor& b) {
  Graph g;
  GraphBuilder gb(g);
  Value va = gb.input("a", sa, a.dtype()), vb = gb.input("b", sb, b.dtype());
  Value c = gb.op(op, {va, vb});
  return run_graph(g, {c.id}, {{va.id, a}, {vb.id, b}})[0].to_vector();
}

TEST(Elementwise, SameShapeValues) {
  const Tensor a = floats({2, 2}, {1.f, 2.f, 3.f, 4.f}), b = floats({2, 2}, {5.f, 6.f, 7.f, 8.f});
  EXPECT_EQ(eval("Add", {2, 2}, a, {2, 2}, b), (std::vector<float>{6, 8, 10, 12}));
  EXPECT_EQ(eval("Sub", {2, 2}, a, {2, 2}, b), (std::vector<float>{-4, -4, -4, -4}));
  EXPECT_EQ(eval("Mul", {2, 2}, a, {2, 2}, b), (std::vector<float>{5, 12, 21, 32}));
}

TEST(Elementwise, BroadcastValues) {
  // (2, 3) + (3,): a row added to every row.
  EXPECT_EQ(eval("Add", {2, 3}, iota({2, 3}), {3}, floats({3}, {10.f, 20.f, 30.f})),
            (std::vector<float>{10, 21, 32, 13, 24, 35}));
  // (2, 1) * (1, 3): an outer product.
  EXPECT_EQ(eval("Mul", {2, 1}, floats({2, 1}, {2.f, 3.f}), {1, 3},
                 floats({1, 3}, {1.f, 10.f, 100.f})),
            (std::vector<float>{2, 20, 200, 3, 30, 300}));
  // scalar - (3,): the scalar on the left.
  EXPECT_EQ(eval("Sub", {}, Tensor::scalar(1.f), {3}, iota({3})), (std::vector<float>{1, 0, -1}));
  // (2, 1, 2) + (3, 1): both sides broadcast, to (2, 3, 2).
  EXPECT_EQ(eval("Add", {2, 1, 2}, iota({2, 1, 2}), {3, 1}, floats({3, 1}, {0.f, 10.f, 20.f})),
            (std::vector<float>{0, 1, 10, 11, 20, 21, 2, 3, 12, 13, 22, 23}));
}

TEST(Elementwise, IntegerAdd) {
  EXPECT_EQ(eval("Add", {3}, Tensor::from_vector({3}, std::vector<int32_t>{1, 2, 3}), {1},
                 Tensor::from_vector({1}, std::vector<int32_t>{40})),
            (std::vector<float>{41, 42, 43}));
}

TEST(Elementwise, RefusesShapesThatDoNotBroadcast) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("a", {2, 3}), b = gb.input("b", {2});
  EXPECT_THAT([&] { gb.op("Add", {a, b}, {}, "sum"); },
              ::testing::ThrowsMessage<ShapeError>(::testing::AllOf(
                  ::testing::HasSubstr("Add 'sum'"), ::testing::HasSubstr("(2, 3)"), ::testing::HasSubstr("(2,)"))));
}

TEST(Elementwise, RefusesMixedDtypes) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("a", {2}), b = gb.input("b", {2}, DType::kI32);
  EXPECT_THROW(gb.mul(a, b), ShapeError);
}

TEST(Elementwise, SumToShapeSumsBroadcastDims) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});
  Value cols = gb.op("SumToShape", {x}, {{"shape", Shape{1, 3}}});
  Value rows = gb.op("SumToShape", {x}, {{"shape", Shape{2, 1}}, {"scale", -1.0}});
  Value all = gb.op("SumToShape", {x}, {{"shape", Shape{}}});
  const auto out = run_graph(g, {cols.id, rows.id, all.id}, {{x.id, iota({2, 3})}});
  EXPECT_EQ(out[0].to_vector(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<float>{-3, -12}));
  EXPECT_EQ(out[2].to_vector(), (std::vector<float>{15}));
  EXPECT_THROW(gb.op("SumToShape", {x}, {{"shape", Shape{4}}}), ShapeError);
}

int count_op(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

TEST(Elementwise, SameShapeGradientEmitsNoSumToShape) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.parameter("a", {2, 3}), b = gb.parameter("b", {2, 3}), bias = gb.parameter("bias", {3});
  Value loss = gb.reduce_sum(gb.add(gb.add(a, b), bias));
  gradients(g, loss.id, {a.id, b.id, bias.id});
  EXPECT_EQ(count_op(g, "SumToShape"), 1);  // only for the broadcast bias
}

struct BinaryCase {
  std::string op;
  Shape a, b;
};

class ElementwiseGrad : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(ElementwiseGrad, MatchesFiniteDifferences) {
  const BinaryCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.parameter("a", c.a), b = gb.parameter("b", c.b);
  Value y = gb.op(c.op, {a, b});
  EXPECT_TRUE(check_gradients(g, y.id, {{a.id, random_tensor(c.a, 1)}, {b.id, random_tensor(c.b, 2)}}, {a.id, b.id}));
}

std::vector<BinaryCase> cases() {
  std::vector<BinaryCase> out;
  for (const char* op : {"Add", "Sub", "Mul"}) {
    out.push_back({op, {3, 4}, {3, 4}});     // same shape
    out.push_back({op, {3, 4}, {4}});        // bias-like row
    out.push_back({op, {3, 1}, {1, 4}});     // both broadcast
    out.push_back({op, {}, {2, 3}});         // scalar
    out.push_back({op, {2, 1, 3}, {4, 1}});  // rank differs, both broadcast
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ElementwiseGrad, ::testing::ValuesIn(cases()), [](const auto& info) {
  return fmt::format("{}_{}", info.param.op, info.index);
});

TEST(Elementwise, MulOfAnInputWithItselfGetsBothContributions) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {5});
  Value y = gb.mul(x, x);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({5}, 3)}}, {x.id}));
}

}  // namespace
}  // namespace sf
