// Send / Receive (comm/send_recv.h): pairs match by (group, sr_tag), keep order, do not
// disturb the group's collectives, and a Receive checks the declared shape and dtype.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <shardflow/comm/comm.h>
#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;

TEST(SendReceive, MatchesBySrTagInOrderAlongsideCollectives) {
  auto world = make_inproc_world(3);
  commtest::run_ranks(3, [&](int r) {
    Group g = world_group(world[r]);
    if (r == 0) {
      send(Tensor::full({2, 2}, 1.0f), {.group = g, .dest = 2, .sr_tag = 1});
      send(Tensor::full({2, 2}, 2.0f), {.group = g, .dest = 2, .sr_tag = 1});
      send(Tensor::full({3}, 9.0f), {.group = g, .dest = 2, .sr_tag = 2});
    }
    // Only rank 0 and 2 take part in the transfers; the collective still lines up.
    Tensor s = all_reduce(Tensor::full({1}, 1.0f), {.group = g, .timeout = 20s});
    EXPECT_EQ(s.item(), 3.0f);
    if (r == 2) {
      EXPECT_EQ(receive({.group = g, .src = 0, .sr_tag = 2, .shape = {3}, .timeout = 20s}).to_vector(),
                (std::vector<float>{9, 9, 9}));
      EXPECT_EQ(receive({.group = g, .src = 0, .sr_tag = 1, .shape = {2, 2}, .timeout = 20s}).to_vector()[0], 1.0f);
      EXPECT_EQ(receive({.group = g, .src = 0, .sr_tag = 1, .shape = {2, 2}, .timeout = 20s}).to_vector()[3], 2.0f);
    }
  });
}

TEST(SendReceive, SubgroupRanksAreGroupLocal) {
  auto world = make_inproc_world(5);
  commtest::run_ranks(5, [&](int r) {
    if (r != 1 && r != 4) return;
    Group g = create_group(world[r], "pair", {4, 1});
    if (r == 4) send(Tensor::full({1}, 4.0f), {.group = g, .dest = 1, .sr_tag = 0});  // group rank 1 = world 1
    if (r == 1) {
      EXPECT_EQ(receive({.group = g, .src = 0, .shape = {1}, .timeout = 20s}).item(), 4.0f);
    }
  });
}

TEST(SendReceive, ReceiveRefusesAnUnexpectedShapeOrDtype) {
  auto world = make_inproc_world(2);
  Group g0 = world_group(world[0]), g1 = world_group(world[1]);
  send(Tensor::full({4}, 1.0f), {.group = g0, .dest = 1, .sr_tag = 7});
  try {
    receive({.group = g1, .src = 0, .sr_tag = 7, .shape = {2, 3}, .timeout = 1s});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("sent f32(4,) but this rank expects f32(2, 3)"), std::string::npos)
        << e.what();
  }
  send(Tensor::full({4}, 1.0f), {.group = g0, .dest = 1, .sr_tag = 7});
  EXPECT_THROW(receive({.group = g1, .src = 0, .sr_tag = 7, .shape = {4}, .dtype = DType::kI32, .timeout = 1s}),
               ShapeError);
}

}  // namespace
}  // namespace sf::comm
