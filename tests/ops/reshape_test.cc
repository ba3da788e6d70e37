// Flatten and Reshape: shapes, -1 inference, errors, and gradients (a Reshape back).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::iota;
using optest::random_tensor;
using optest::run_graph;

TEST(Flatten, KeepsDim0AndElementOrder) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3, 4});
  Value y = gb.flatten(x);
  ASSERT_EQ(gb.shape(y), (Shape{2, 12}));
  EXPECT_EQ(run_graph(g, {y.id}, {{x.id, iota({2, 3, 4})}})[0].to_vector(), iota({24}).to_vector());
}

TEST(Reshape, InfersMinusOne) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3, 4});
  EXPECT_EQ(gb.shape(gb.reshape(x, {4, -1})), (Shape{4, 6}));
  EXPECT_EQ(gb.shape(gb.reshape(x, {-1})), (Shape{24}));
}

TEST(Reshape, RefusesBadShapes) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3, 4});
  EXPECT_THAT([&] { gb.reshape(x, {5, -1}); }, ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("Reshape")));
  EXPECT_THAT([&] { gb.reshape(x, {-1, -1}); }, ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("-1")));
  EXPECT_THAT([&] { gb.reshape(x, {5, 5}); }, ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("(5, 5)")));
}

TEST(Flatten, GradientsMatchFiniteDifferences) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 3, 2});
  Value y = gb.flatten(x);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({2, 3, 2}, 1)}}, {x.id}));
}

TEST(Reshape, GradientsMatchFiniteDifferences) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 6});
  Value y = gb.reshape(x, {3, -1, 2});
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({2, 6}, 1)}}, {x.id}));
}

}  // namespace
}  // namespace sf
