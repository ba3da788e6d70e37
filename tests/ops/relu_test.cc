// ReLU and ReluGrad: values, and gradients away from the kink at 0.
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::random_away_from_zero;
using optest::run_graph;

TEST(ReLU, ClampsNegativesToZero) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {4});
  Value y = gb.relu(x);
  EXPECT_EQ(run_graph(g, {y.id}, {{x.id, floats({4}, {-1.f, 0.f, 2.f, -0.5f})}})[0].to_vector(),
            (std::vector<float>{0, 0, 2, 0}));
}

TEST(ReLU, GradPassesDoutWhereOutputIsPositive) {
  Graph g;
  GraphBuilder gb(g);
  Value d = gb.input("dout", {3}), y = gb.input("y", {3});
  Value dx = gb.op("ReluGrad", {d, y});
  EXPECT_EQ(run_graph(g, {dx.id},
                      {{d.id, floats({3}, {5.f, 6.f, 7.f})}, {y.id, floats({3}, {0.f, 1.f, 0.f})}})[0]
                .to_vector(),
            (std::vector<float>{0, 6, 0}));
}

TEST(ReLU, GradientsMatchFiniteDifferences) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {3, 5});
  Value y = gb.relu(x);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_away_from_zero({3, 5}, 1)}}, {x.id}));
}

}  // namespace
}  // namespace sf
