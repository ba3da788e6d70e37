// Concat: values on axis 0, 1 and -1, errors, and gradients (one StridedSlice per input).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::random_tensor;
using optest::run_graph;

TEST(Concat, Values) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("a", {2, 2}), b = gb.input("b", {2, 1}), c = gb.input("c", {1, 2});
  Value cols = gb.concat({a, b}, 1);
  Value last = gb.concat({b, a}, -1);
  Value rows = gb.concat({a, c}, 0);
  ASSERT_EQ(gb.shape(cols), (Shape{2, 3}));
  ASSERT_EQ(gb.shape(rows), (Shape{3, 2}));
  const auto out = run_graph(g, {cols.id, last.id, rows.id},
                             {{a.id, floats({2, 2}, {1.f, 2.f, 3.f, 4.f})},
                              {b.id, floats({2, 1}, {5.f, 6.f})},
                              {c.id, floats({1, 2}, {7.f, 8.f})}});
  EXPECT_EQ(out[0].to_vector(), (std::vector<float>{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<float>{5, 1, 2, 6, 3, 4}));
  EXPECT_EQ(out[2].to_vector(), (std::vector<float>{1, 2, 3, 4, 7, 8}));
}

TEST(Concat, RefusesMismatchedDimsAndBadAxis) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("a", {2, 2}), b = gb.input("b", {3, 1});
  EXPECT_THAT([&] { gb.concat({a, b}, 1); },
              ::testing::ThrowsMessage<ShapeError>(::testing::AllOf(
                  ::testing::HasSubstr("Concat"), ::testing::HasSubstr("(3, 1)"), ::testing::HasSubstr("axis 1"))));
  EXPECT_THROW(gb.concat({a, a}, 2), ShapeError);
}

TEST(Concat, GradientsMatchFiniteDifferencesOnAxis0) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.parameter("a", {2, 3}), b = gb.parameter("b", {3, 3});
  Value y = gb.concat({a, b}, 0);
  EXPECT_TRUE(check_gradients(g, y.id, {{a.id, random_tensor({2, 3}, 1)}, {b.id, random_tensor({3, 3}, 2)}},
                              {a.id, b.id}));
}

TEST(Concat, GradientsMatchFiniteDifferencesOnAxis1) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.parameter("a", {2, 1, 2}), b = gb.parameter("b", {2, 3, 2}), c = gb.parameter("c", {2, 2, 2});
  Value y = gb.concat({a, b, c}, 1);
  EXPECT_TRUE(check_gradients(
      g, y.id,
      {{a.id, random_tensor({2, 1, 2}, 1)}, {b.id, random_tensor({2, 3, 2}, 2)}, {c.id, random_tensor({2, 2, 2}, 3)}},
      {a.id, b.id, c.id}));
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

TEST(FlattenConcat, PacksEveryElementInRowMajorOrder) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("a", {2, 2}), b = gb.input("b", {3}), c = gb.input("c", {1, 1, 1});
  Value packed = gb.op("FlattenConcat", {a, b, c});
  ASSERT_EQ(gb.shape(packed), (Shape{8}));
  const auto out = optest::run_graph(g, {packed.id},
                                     {{a.id, optest::floats({2, 2}, {1.f, 2.f, 3.f, 4.f})},
                                      {b.id, optest::floats({3}, {5.f, 6.f, 7.f})},
                                      {c.id, optest::floats({1, 1, 1}, {8.f})}});
  EXPECT_EQ(out[0].to_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(FlattenConcat, RefusesMixedDtypesNamingTheInput) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("a", {2}), b = gb.input("b", {2}, DType::kI32);
  EXPECT_THAT([&] { gb.op("FlattenConcat", {a, b}); },
              ::testing::ThrowsMessage<ShapeError>(::testing::AllOf(::testing::HasSubstr("FlattenConcat"),
                                                                    ::testing::HasSubstr("input 1 is i32"))));
}

TEST(FlattenConcat, GradientsAreEachInputsRangeReshapedBack) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.parameter("a", {2, 3}), b = gb.parameter("b", {4});
  Value y = gb.op("FlattenConcat", {a, b});
  EXPECT_TRUE(optest::check_gradients(
      g, y.id, {{a.id, optest::random_tensor({2, 3}, 1)}, {b.id, optest::random_tensor({4}, 2)}}, {a.id, b.id}));
}

}  // namespace
}  // namespace sf
