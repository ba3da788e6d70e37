// Asynchronous collectives (comm/work.h): the caller computes while the collective runs on
// the group's worker; several in flight complete in program order; sync calls interleave.
#include <gtest/gtest.h>

#include <chrono>

#include <shardflow/comm/comm.h>
#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;

TEST(Async, SeveralCollectivesInFlightCompleteCorrectly) {
  const int n = 4;
  auto world = make_inproc_world(n);
  commtest::run_ranks(n, [&](int r) {
    Group g = world_group(world[r]);
    std::vector<Work> works;
    for (int i = 0; i < 6; ++i)
      works.push_back(all_reduce_async(Tensor::full({5000}, static_cast<float>(r + i)), {.group = g, .timeout = 20s}));
    Work gathered = all_gather_async(Tensor::full({2}, static_cast<float>(r)), {.group = g, .timeout = 20s});
    // A synchronous call in between takes the next sequence number and does not disturb them.
    Tensor b = broadcast(Tensor::full({3}, static_cast<float>(r)), {.group = g, .root = 1, .timeout = 20s});
    EXPECT_EQ(b.to_vector(), (std::vector<float>{1, 1, 1}));
    Work bar = barrier_async({.group = g, .timeout = 20s});
    for (int i = 0; i < 6; ++i) {
      Tensor out = works[i].get();
      EXPECT_EQ(out.to_vector()[4999], static_cast<float>(0 + 1 + 2 + 3 + 4 * i));
      EXPECT_TRUE(works[i].done());
      EXPECT_FALSE(works[i].error());
    }
    EXPECT_EQ(gathered.get().to_vector(), (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3}));
    EXPECT_TRUE(bar.wait(20s));
    EXPECT_FALSE(bar.get().defined());
  });
}

TEST(Async, WaitReturnsFalseWhileAPeerIsLateThenTrue) {
  auto world = make_inproc_world(2);
  commtest::run_ranks(2, [&](int r) {
    Group g = world_group(world[r]);
    if (r == 1) std::this_thread::sleep_for(100ms);
    Work w = reduce_scatter_async(Tensor::full({2}, 1.0f), {.group = g, .timeout = 20s});
    if (r == 0) {
      EXPECT_FALSE(w.wait(10ms));
    }
    EXPECT_TRUE(w.wait(20s));
    EXPECT_EQ(w.get().item(), 2.0f);
  });
}

TEST(Async, DroppingTheGroupWaitsForQueuedWork) {
  auto world = make_inproc_world(2);
  commtest::run_ranks(2, [&](int r) {
    Work w;
    {
      Group g = world_group(world[r]);
      w = all_to_all_async(Tensor::full({2}, static_cast<float>(r)), {.group = g, .split_count = 2, .timeout = 20s});
    }  // the last handle goes: its destructor drains the worker
    EXPECT_TRUE(w.done());
    EXPECT_EQ(w.get().to_vector(), (std::vector<float>{0, 1}));
  });
}

TEST(Async, EmptyWorkHandleIsRefused) {
  Work w;
  EXPECT_FALSE(w.valid());
  EXPECT_THROW(w.done(), InvalidArgument);
}

}  // namespace
}  // namespace sf::comm
