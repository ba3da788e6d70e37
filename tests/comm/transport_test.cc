// Tests for the inproc transport (comm/inproc/): FIFO per (peer, tag), independent tags,
// delivery by reference, bounded receives that throw PeerLost naming the peer and tag, and
// closed endpoints.
#include <shardflow/comm/inproc/transport.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;

TEST(InprocTransport, WorldHasOneEndpointPerRank) {
  auto world = make_inproc_world(3);
  ASSERT_EQ(world.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(world[r]->rank(), r);
    EXPECT_EQ(world[r]->size(), 3);
    EXPECT_EQ(world[r]->name(), "inproc");
  }
  EXPECT_THROW(make_inproc_world(0), InvalidArgument);
}

TEST(InprocTransport, FifoPerPeerAndTagAndTagsAreIndependent) {
  auto world = make_inproc_world(2);
  for (int i = 0; i < 5; ++i) world[0]->send(1, 7, Tensor::full({1}, static_cast<float>(i)));
  world[0]->send(1, 9, Tensor::full({1}, 100.0f));
  // Tag 9 is received first although it was sent last: tags are separate queues.
  EXPECT_EQ(world[1]->recv(0, 9, 100ms).item(), 100.0f);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(world[1]->recv(0, 7, 100ms).item(), static_cast<float>(i));
}

TEST(InprocTransport, PassesTensorsByReference) {
  auto world = make_inproc_world(2);
  Tensor t = Tensor::full({4}, 1.0f);
  world[1]->send(0, 1, t);
  Tensor got = world[0]->recv(1, 1, 100ms);
  EXPECT_TRUE(got.shares_storage(t));
}

TEST(InprocTransport, RecvPastDeadlineThrowsPeerLostNamingPeerAndTag) {
  auto world = make_inproc_world(3);
  const auto start = std::chrono::steady_clock::now();
  try {
    world[0]->recv(2, 0x2a, 50ms);
    FAIL() << "recv returned without a message";
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_NE(std::string(e.what()).find("rank 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("0x2a"), std::string::npos) << e.what();
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 50ms);
  EXPECT_LT(took, 2s);
}

TEST(InprocTransport, RecvWakesWhenTheMessageArrives) {
  auto world = make_inproc_world(2);
  commtest::run_ranks(2, [&](int r) {
    if (r == 0) {
      std::this_thread::sleep_for(20ms);
      world[0]->send(1, 3, Tensor::full({2}, 5.0f));
    } else {
      EXPECT_EQ(world[1]->recv(0, 3, 5s).to_vector(), (std::vector<float>{5.0f, 5.0f}));
    }
  });
}

TEST(InprocTransport, ClosedPeerFailsReceiversAtOnceAfterItsPendingMessages) {
  auto world = make_inproc_world(3);
  world[2]->send(0, 1, Tensor::full({1}, 3.0f));
  world[2]->close();
  EXPECT_EQ(world[0]->recv(2, 1, 1s).item(), 3.0f);  // sent before closing: still delivered
  const auto start = std::chrono::steady_clock::now();
  try {
    world[0]->recv(2, 1, 10s);
    FAIL();
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_NE(std::string(e.what()).find("closed"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  world[1]->send(2, 1, Tensor::full({1}, 1.0f));  // to a closed rank: dropped, no error
}

TEST(InprocTransport, PeerOutOfRangeIsInvalidArgument) {
  auto world = make_inproc_world(2);
  EXPECT_THROW(world[0]->send(2, 0, Tensor::full({1}, 0.0f)), InvalidArgument);
  EXPECT_THROW(world[0]->recv(-1, 0, 10ms), InvalidArgument);
}

}  // namespace
}  // namespace sf::comm
