// StridedSlice and StridedSliceGrad: Python slice semantics (negative begin/end, clamping,
// strides), errors, and gradients with stride 2.
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

std::vector<float> slice_of_iota(const Shape& s, const std::vector<int64_t>& begin, const std::vector<int64_t>& end,
                                 const std::vector<int64_t>& strides = {}) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", s);
  Value y = gb.strided_slice(x, begin, end, strides);
  return run_graph(g, {y.id}, {{x.id, iota(s)}})[0].to_vector();
}

TEST(StridedSlice, Values) {
  // x = iota(4, 5): row r holds 5r .. 5r+4.
  EXPECT_EQ(slice_of_iota({4, 5}, {1, 0}, {3, 5}), (std::vector<float>{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  // rows 1 and 3 (end clamped), cols -4 .. -1 = 1 .. 3.
  EXPECT_EQ(slice_of_iota({4, 5}, {1, -4}, {100, -1}, {2, 1}), (std::vector<float>{6, 7, 8, 16, 17, 18}));
  // every second column.
  EXPECT_EQ(slice_of_iota({2, 5}, {0, 0}, {2, 5}, {1, 2}), (std::vector<float>{0, 2, 4, 5, 7, 9}));
  // fewer entries than dims: the rest is taken whole; an empty range gives no elements.
  EXPECT_EQ(slice_of_iota({3, 2}, {-1}, {3}), (std::vector<float>{4, 5}));
  EXPECT_TRUE(slice_of_iota({3, 2}, {2, 0}, {1, 2}).empty());
}

TEST(StridedSlice, GradScattersIntoZeros) {
  Graph g;
  GraphBuilder gb(g);
  Value d = gb.input("dout", {2, 2});
  Value dx = gb.op("StridedSliceGrad", {d},
                   {{"shape", Shape{3, 4}}, {"begin", Shape{1, 0}}, {"end", Shape{3, 4}}, {"strides", Shape{1, 2}}});
  EXPECT_EQ(run_graph(g, {dx.id}, {{d.id, floats({2, 2}, {1.f, 2.f, 3.f, 4.f})}})[0].to_vector(),
            (std::vector<float>{0, 0, 0, 0, 1, 0, 2, 0, 3, 0, 4, 0}));
}

TEST(StridedSlice, RefusesNonPositiveStrideAndTooManyEntries) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {4, 5});
  EXPECT_THAT([&] { gb.strided_slice(x, {0, 0}, {4, 5}, {1, -1}); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("must be positive")));
  EXPECT_THAT([&] { gb.strided_slice(x, {0, 0, 0}, {1, 1, 1}); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("StridedSlice")));
}

TEST(StridedSlice, GradientsMatchFiniteDifferencesWithStride2) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {5, 6});
  Value y = gb.strided_slice(x, {1, -5}, {5, 6}, {2, 2});
  ASSERT_EQ(gb.shape(y), (Shape{2, 3}));
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({5, 6}, 1)}}, {x.id}));
}

}  // namespace
}  // namespace sf
