// BiasAdd and BiasAddGrad: values on 2-D and NCHW inputs, shape errors, gradients.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::iota;
using optest::random_tensor;
using optest::run_graph;

TEST(BiasAdd, AddsAlongLastDimOf2D) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3}), b = gb.parameter("b", {3});
  Value y = gb.bias_add(x, b);
  const Tensor out = run_graph(g, {y.id}, {{x.id, iota({2, 3})}, {b.id, floats({3}, {10.f, 20.f, 30.f})}})[0];
  EXPECT_EQ(out.to_vector(), (std::vector<float>{10, 21, 32, 13, 24, 35}));
}

TEST(BiasAdd, AddsAlongChannelDim1OfNCHW) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 2, 1, 2}), b = gb.parameter("b", {2});
  Value y = gb.bias_add(x, b);
  const Tensor out = run_graph(g, {y.id}, {{x.id, iota({2, 2, 1, 2})}, {b.id, floats({2}, {100.f, -100.f})}})[0];
  EXPECT_EQ(out.to_vector(), (std::vector<float>{100, 101, -98, -97, 104, 105, -94, -93}));
}

TEST(BiasAdd, GradSumsEverythingButChannelDim) {
  Graph g;
  GraphBuilder gb(g);
  Value d = gb.input("dout", {2, 2, 1, 2});
  Value db = gb.op("BiasAddGrad", {d});
  ASSERT_EQ(gb.shape(db), (Shape{2}));
  // channel 0 holds 0, 1, 4, 5; channel 1 holds 2, 3, 6, 7.
  EXPECT_EQ(run_graph(g, {db.id}, {{d.id, iota({2, 2, 1, 2})}})[0].to_vector(), (std::vector<float>{10, 18}));
}

TEST(BiasAdd, RefusesBiasOfWrongSize) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {4, 3, 5}), b = gb.parameter("b", {5});
  EXPECT_THAT([&] { gb.bias_add(x, b); },
              ::testing::ThrowsMessage<ShapeError>(::testing::AllOf(::testing::HasSubstr("BiasAdd"),
                                                                    ::testing::HasSubstr("(4, 3, 5)"))));
}

TEST(BiasAdd, GradientsMatchFiniteDifferences2D) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {4, 3}), b = gb.parameter("b", {3});
  Value y = gb.bias_add(x, b);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({4, 3}, 1)}, {b.id, random_tensor({3}, 2)}}, {x.id, b.id}));
}

TEST(BiasAdd, GradientsMatchFiniteDifferencesNCHW) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 3, 2, 2}), b = gb.parameter("b", {3});
  Value y = gb.bias_add(x, b);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({2, 3, 2, 2}, 1)}, {b.id, random_tensor({3}, 2)}},
                              {x.id, b.id}));
}

}  // namespace
}  // namespace sf
