// AlltoAll with split_dim != concat_dim and negative dims (MindSpore semantics): each rank's
// output is checked element by element against index arithmetic on the inputs.
#include <gtest/gtest.h>

#include <chrono>

#include <shardflow/comm/comm.h>
#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;

// Input on rank r: x[a][b][c] = r*1000 + a*100 + b*10 + c, shape (2, 6, 3) for n = 3.
Tensor input_of(int r) {
  Tensor t({2, 6, 3}, DType::kI32);
  int32_t* p = t.i32();
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 6; ++b)
      for (int c = 0; c < 3; ++c) *p++ = r * 1000 + a * 100 + b * 10 + c;
  return t;
}

TEST(AlltoAll, SplitDimOneConcatDimTwo) {
  const int n = 3;
  auto world = make_inproc_world(n);
  std::vector<Tensor> out(n);
  commtest::run_ranks(n, [&](int r) {
    Group g = world_group(world[r]);
    out[r] = all_to_all(input_of(r), {.group = g, .split_count = n, .split_dim = 1, .concat_dim = -1, .timeout = 20s});
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(out[r].shape(), (Shape{2, 2, 9}));
    const int32_t* p = out[r].i32();
    // out[a][b][j*3 + c] = input_of(j)[a][r*2 + b][c]
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        for (int j = 0; j < n; ++j)
          for (int c = 0; c < 3; ++c)
            ASSERT_EQ(p[(a * 2 + b) * 9 + j * 3 + c], j * 1000 + a * 100 + (r * 2 + b) * 10 + c)
                << "rank " << r << " a " << a << " b " << b << " j " << j << " c " << c;
  }
}

TEST(AlltoAll, SplitDimTwoConcatDimZero) {
  const int n = 3;
  auto world = make_inproc_world(n);
  std::vector<Tensor> out(n);
  commtest::run_ranks(n, [&](int r) {
    Group g = world_group(world[r]);
    out[r] = all_to_all(input_of(r), {.group = g, .split_count = n, .split_dim = 2, .concat_dim = 0, .timeout = 20s});
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(out[r].shape(), (Shape{6, 6, 1}));
    const int32_t* p = out[r].i32();
    // out[j*2 + a][b][0] = input_of(j)[a][b][r]
    for (int j = 0; j < n; ++j)
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 6; ++b) ASSERT_EQ(p[(j * 2 + a) * 6 + b], j * 1000 + a * 100 + b * 10 + r);
  }
}

}  // namespace
}  // namespace sf::comm
