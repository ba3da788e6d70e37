// ApplyGradientDescent reading its delta in place from a flat buffer (attr delta_offset), as
// data parallel's reduced gradient buckets are read, and its refusal of an offset past the end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include <shardflow/ops/executor.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::floats;

TEST(ApplyGradientDescent, ReadsDeltaAtItsOffsetInAFlatBuffer) {
  Graph g;
  GraphBuilder gb(g);
  Value w = gb.parameter("w", {2, 2});
  Value flat = gb.input("bucket", {7});
  Value upd = gb.op("ApplyGradientDescent", {w, flat}, {{"alpha", 0.5}, {"num_control", int64_t{0}}, {"delta_offset", int64_t{2}}});
  Tensor wv = floats({2, 2}, {1.f, 1.f, 1.f, 1.f});
  Executor ex(g, {upd.id});
  ex.bind(w.id, wv);
  ex.bind(flat.id, floats({7}, {9.f, 9.f, 2.f, 4.f, 6.f, 8.f, 9.f}));
  ex.run();
  EXPECT_EQ(wv.to_vector(), (std::vector<float>{0.f, -1.f, -2.f, -3.f}));
}

TEST(ApplyGradientDescent, RefusesAnOffsetPastTheBuffer) {
  Graph g;
  GraphBuilder gb(g);
  Value w = gb.parameter("w", {2, 2});
  Value flat = gb.input("bucket", {5});
  EXPECT_THAT([&] {
    gb.op("ApplyGradientDescent", {w, flat}, {{"alpha", 0.5}, {"num_control", int64_t{0}}, {"delta_offset", int64_t{2}}});
  },
              ::testing::ThrowsMessage<ShapeError>(::testing::AllOf(::testing::HasSubstr("ApplyGradientDescent"),
                                                                    ::testing::HasSubstr("offset 2"))));
}

TEST(ApplyGradientDescent, WithoutOffsetTheDeltaMustHaveTheVarsShape) {
  Graph g;
  GraphBuilder gb(g);
  Value w = gb.parameter("w", {2, 2});
  Value flat = gb.input("delta", {4});
  EXPECT_THROW(gb.op("ApplyGradientDescent", {w, flat}, {{"alpha", 0.5}, {"num_control", int64_t{0}}}), ShapeError);
}

}  // namespace
}  // namespace sf
