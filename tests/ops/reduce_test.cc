// ReduceSum and ReduceMean: values over one axis, several, all, with keep_dims; errors; and
// gradients through BroadcastTo.
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

TEST(Reduce, Values) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});  // 0 1 2 / 3 4 5
  Value s0 = gb.reduce_sum(x, {0});
  Value s1k = gb.reduce_sum(x, {-1}, true);
  Value all = gb.reduce_sum(x);
  Value m1 = gb.reduce_mean(x, {1});
  Value mall = gb.reduce_mean(x, {0, 1}, true);
  EXPECT_EQ(gb.shape(s0), (Shape{3}));
  EXPECT_EQ(gb.shape(s1k), (Shape{2, 1}));
  EXPECT_EQ(gb.shape(all), (Shape{}));
  EXPECT_EQ(gb.shape(mall), (Shape{1, 1}));
  const auto out = run_graph(g, {s0.id, s1k.id, all.id, m1.id, mall.id}, {{x.id, iota({2, 3})}});
  EXPECT_EQ(out[0].to_vector(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<float>{3, 12}));
  EXPECT_EQ(out[2].to_vector(), (std::vector<float>{15}));
  EXPECT_EQ(out[3].to_vector(), (std::vector<float>{1, 4}));
  EXPECT_EQ(out[4].to_vector(), (std::vector<float>{2.5f}));
}

TEST(Reduce, OuterAndInnerAxesOf3D) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 2, 3});  // element (i, j, k) = 6i + 3j + k
  Value y = gb.reduce_sum(x, {0, 2});
  // j = 0: (0+1+2) + (6+7+8) = 24; j = 1: (3+4+5) + (9+10+11) = 42.
  EXPECT_EQ(run_graph(g, {y.id}, {{x.id, iota({2, 2, 3})}})[0].to_vector(), (std::vector<float>{24, 42}));
}

TEST(Reduce, RefusesBadAxes) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});
  EXPECT_THAT([&] { gb.reduce_sum(x, {2}); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("axis 2 out of range")));
  EXPECT_THAT([&] { gb.reduce_mean(x, {1, -1}); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("listed twice")));
}

struct ReduceCase {
  std::string op;
  std::vector<int64_t> axis;
  bool keep_dims;
};

class ReduceGrad : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(ReduceGrad, MatchesFiniteDifferences) {
  const ReduceCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 3, 4});
  Value y = gb.op(c.op, {x}, {{"axis", c.axis}, {"keep_dims", int64_t{c.keep_dims}}});
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({2, 3, 4}, 1)}}, {x.id}));
}

std::vector<ReduceCase> reduce_cases() {
  std::vector<ReduceCase> out;
  for (const char* op : {"ReduceSum", "ReduceMean"})
    for (bool keep : {false, true}) {
      out.push_back({op, {1}, keep});      // one axis
      out.push_back({op, {-1}, keep});     // the innermost, by a negative index
      out.push_back({op, {0, 2}, keep});   // two, not adjacent
      out.push_back({op, {}, keep});       // all
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Axes, ReduceGrad, ::testing::ValuesIn(reduce_cases()), [](const auto& info) {
  return fmt::format("{}_{}", info.param.op, info.index);
});

}  // namespace
}  // namespace sf
