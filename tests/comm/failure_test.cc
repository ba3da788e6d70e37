// Failure tests: a rank that never joins a collective, or whose endpoint closes, makes every
// other rank throw PeerLost naming that rank (and the collective and sequence number) within
// the configured timeout plus the notice grace (comm/detail/call.h) — never a hang — and the
// group fails fast afterwards.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <shardflow/comm/comm.h>
#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kTimeout = 300ms;
// Timeout + grace (timeout / 2) + scheduling slack on a loaded 2-core machine.
constexpr auto kBound = 2500ms;

// Runs `op(group)` on every world rank but `absent`; checks each throws PeerLost naming it.
void expect_all_name_absent(int n, int absent, const std::function<void(const Group&)>& op, const char* what) {
  auto world = make_inproc_world(n);
  const auto start = Clock::now();
  auto errors = commtest::run_ranks_collect(n, [&](int r) {
    if (r == absent) return;
    Group g = world_group(world[r]);
    op(g);
  });
  EXPECT_LT(Clock::now() - start, kBound);
  for (int r = 0; r < n; ++r) {
    if (r == absent) continue;
    ASSERT_TRUE(errors[r]) << what << ": rank " << r << " did not fail";
    try {
      std::rethrow_exception(errors[r]);
    } catch (const PeerLost& e) {
      EXPECT_EQ(e.rank(), absent) << what << " rank " << r << ": " << e.what();
      const std::string msg = e.what();
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
      EXPECT_NE(msg.find("rank " + std::to_string(absent) + " did not take part"), std::string::npos) << msg;
      EXPECT_NE(msg.find("seq 0"), std::string::npos) << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " rank " << r << " threw something else: " << e.what();
    }
  }
}

TEST(Failure, AbsentRankIsNamedByEveryRankInRingAllReduce) {
  expect_all_name_absent(5, 2, [](const Group& g) {
    all_reduce(Tensor::full({100000}, 1.0f), {.group = g, .algorithm = Algorithm::kRing, .timeout = kTimeout});
  }, "AllReduce");
}

TEST(Failure, AbsentRankIsNamedByEveryRankInRecursiveDoubling) {
  expect_all_name_absent(6, 3, [](const Group& g) {
    all_reduce(Tensor::full({10}, 1.0f), {.group = g, .algorithm = Algorithm::kRecursiveDoubling, .timeout = kTimeout});
  }, "AllReduce");
}

TEST(Failure, AbsentRankIsNamedInAllGatherAndReduceScatter) {
  expect_all_name_absent(4, 1, [](const Group& g) { all_gather(Tensor::full({8}, 1.0f), {.group = g, .timeout = kTimeout}); },
                         "AllGather");
  expect_all_name_absent(4, 0, [](const Group& g) {
    reduce_scatter(Tensor::full({8}, 1.0f), {.group = g, .timeout = kTimeout});
  }, "ReduceScatter");
}

TEST(Failure, AbsentRankIsNamedInAlltoAllAndBarrier) {
  expect_all_name_absent(3, 2, [](const Group& g) {
    all_to_all(Tensor::full({6}, 1.0f), {.group = g, .split_count = 3, .timeout = kTimeout});
  }, "AlltoAll");
  expect_all_name_absent(5, 4, [](const Group& g) { barrier({.group = g, .timeout = kTimeout}); }, "Barrier");
}

TEST(Failure, AbsentRootOfBroadcastIsNamed) {
  expect_all_name_absent(6, 0, [](const Group& g) {
    broadcast(Tensor::full({10}, 1.0f), {.group = g, .root = 0, .timeout = kTimeout});
  }, "Broadcast");
}

TEST(Failure, ClosedEndpointIsNamedAndTheGroupFailsFastAfterwards) {
  const int n = 4;
  auto world = make_inproc_world(n);
  world[2]->close();
  auto errors = commtest::run_ranks_collect(n, [&](int r) {
    if (r == 2) return;
    Group g = world_group(world[r]);
    try {
      all_reduce(Tensor::full({1000}, 1.0f), {.group = g, .algorithm = Algorithm::kRing, .timeout = kTimeout});
    } catch (const PeerLost& e) {
      EXPECT_EQ(e.rank(), 2) << "rank " << r << ": " << e.what();
    }
    // The group is broken now: the next collective fails at once, naming the same rank.
    all_reduce(Tensor::full({4}, 1.0f), {.group = g, .timeout = 10s});
    ADD_FAILURE() << "the second collective on a failed group returned";
  });
  for (int r : {0, 1, 3}) {
    ASSERT_TRUE(errors[r]);
    try {
      std::rethrow_exception(errors[r]);
    } catch (const PeerLost& e) {
      EXPECT_EQ(e.rank(), 2);
      EXPECT_NE(std::string(e.what()).find("failed earlier"), std::string::npos) << e.what();
    }
  }
}

TEST(Failure, AsyncWorkCarriesPeerLost) {
  auto world = make_inproc_world(3);
  auto errors = commtest::run_ranks_collect(3, [&](int r) {
    if (r == 1) return;
    Group g = world_group(world[r]);
    Work w = all_reduce_async(Tensor::full({16}, 1.0f), {.group = g, .timeout = kTimeout});
    EXPECT_FALSE(w.wait(1ms));
    EXPECT_THROW(w.get(), PeerLost);
    EXPECT_TRUE(w.done());
    EXPECT_TRUE(w.error());
  });
  for (int r : {0, 2}) EXPECT_FALSE(errors[r]);
}

TEST(Failure, ReceiveTimeoutNamesTheSource) {
  auto world = make_inproc_world(3);
  Group g = world_group(world[0]);
  try {
    receive({.group = g, .src = 2, .sr_tag = 5, .shape = {3}, .timeout = 50ms});
    FAIL();
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_NE(std::string(e.what()).find("sr_tag 5"), std::string::npos) << e.what();
  }
}

// Rank 2 goes silent. Rank 3 fails the first collective waiting for it, while ranks 0 and 1
// finish theirs and wait in the next one for rank 3, which no longer takes part: they must
// name rank 2, whom rank 3 blamed, not rank 3.
TEST(Failure, RanksAheadNameTheRankThatAFailedPeerBlamed) {
  auto world = make_inproc_world(4);
  const auto start = Clock::now();
  auto errors = commtest::run_ranks_collect(4, [&](int r) {
    if (r == 2) return;
    Group g = world_group(world[r]);
    NeighborExchangeOptions o;
    o.group = g;
    o.timeout = kTimeout;
    if (r == 3) o.recv_rank_ids = {2}, o.recv_shapes = {{4}};
    neighbor_exchange({}, o);  // ranks 0 and 1 exchange nothing and return at once
    all_reduce(Tensor::full({16}, 1.0f), {.group = g, .timeout = kTimeout});
  });
  EXPECT_LT(Clock::now() - start, 2 * kBound);
  for (int r : {0, 1, 3}) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    try {
      std::rethrow_exception(errors[r]);
    } catch (const PeerLost& e) {
      EXPECT_EQ(e.rank(), 2) << "rank " << r << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace sf::comm
