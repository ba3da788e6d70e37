// The membership protocol (comm/membership.h) and the transport features it stands on
// (comm/transport.h: lost and closed peers, interrupt, the next world's endpoints), on real zmq
// sockets with one thread per rank. A closed endpoint stands in for a lost rank (the killed and
// frozen processes are tests/elastic's, through sfrun): the survivors agree on the same members
// and step, link a new world that carries messages, go on past a rank lost during the agreement,
// and a rank left alone among closed peers learns that it was removed. A replacement asking at
// rank 0's door joins the next world, having readied buffers for the sizes the door expects;
// another secret and a door that closes refuse it.
#include <shardflow/comm/membership.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/zmq/door.h>
#include <shardflow/comm/zmq/transport.h>
#include <shardflow/core/error.h>
#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Runs `body` on a thread of its own; what it throws lands in `error`.
std::thread catching(std::string& error, std::function<void()> body) {
  return std::thread([&error, body = std::move(body)] {
    try {
      body();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
}

// The requests a door holds, polled for until one comes (10 s at most); its polls advance the
// joiners' handshakes.
std::vector<JoinRequest> requests_at(JoinDoor& door) {
  std::vector<JoinRequest> asked;
  const auto deadline = Clock::now() + 10s;
  while (asked.empty() && Clock::now() < deadline) {
    asked = door.poll();
    std::this_thread::sleep_for(5ms);
  }
  return asked;
}

TEST(ZmqMembership, AnInterruptStopsReceivesButNotTheMembershipTags) {
  auto world = make_zmq_world(2);
  const Tag data = 7, member = membership_tag(0, 0);
  world[1]->send(0, member, Tensor::from_vector({1}, std::vector<int32_t>{5}));
  std::thread interrupter([&] {
    std::this_thread::sleep_for(100ms);
    world[0]->interrupt(1, "was lost (test)");
  });
  const auto start = Clock::now();
  try {
    world[0]->recv(1, data, 10s);  // rank 1 is alive and silent: only the interrupt ends the wait
    ADD_FAILURE() << "the receive returned";
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), 1);
    EXPECT_NE(std::string(e.what()).find("was lost (test)"), std::string::npos) << e.what();
  }
  interrupter.join();
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(world[0]->recv(1, member, 1s).i32()[0], 5);  // membership messages still arrive
}

TEST(ZmqMembership, AClearedInterruptLetsReceivesReadWhatWasSentBefore) {
  auto world = make_zmq_world(2);
  const Tag data = 7;
  world[1]->send(0, data, Tensor::from_vector({1}, std::vector<int32_t>{9}));
  world[0]->interrupt(1, "closed its endpoint (test)");
  EXPECT_THROW(world[0]->recv(1, data, 1s), PeerLost);  // the message waits, unread
  world[0]->clear_interrupt();
  EXPECT_EQ(world[0]->recv(1, data, 5s).i32()[0], 9);
  world[1]->send(0, data, Tensor::from_vector({1}, std::vector<int32_t>{10}));
  EXPECT_EQ(world[0]->recv(1, data, 5s).i32()[0], 10);
}

// The loss watcher's wait for a join notice: nothing within the wait is no error.
TEST(ZmqMembership, APollGivesNothingWithinItsWaitTheMessageWhenOneComesAndFailsOnAClosedPeer) {
  auto world = make_zmq_world(2);
  const Tag data = 7;
  const auto start = Clock::now();
  EXPECT_FALSE(world[0]->poll_recv(1, data, 30ms).has_value());
  EXPECT_GE(Clock::now() - start, 25ms);
  world[1]->send(0, data, Tensor::from_vector({1}, std::vector<int32_t>{4}));
  const std::optional<Tensor> got = world[0]->poll_recv(1, data, 5s);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->i32()[0], 4);
  world[1]->close();
  const auto closed = Clock::now();
  bool threw = false;
  while (!threw && Clock::now() - closed < 5s) {
    try {
      (void)world[0]->poll_recv(1, data, 50ms);
    } catch (const PeerLost& e) {
      threw = true;
      EXPECT_EQ(e.rank(), 1);
    }
  }
  EXPECT_TRUE(threw) << "a closed peer was not reported within 5 s";
}

TEST(ZmqMembership, ClosedPeersAreReportedNotLost) {
  auto world = make_zmq_world(3);
  world[2]->close();
  const auto deadline = Clock::now() + 5s;
  while (world[0]->closed_peers().empty() && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(world[0]->closed_peers(), std::vector<int>{2});
  EXPECT_TRUE(world[0]->lost_peers().empty());
  EXPECT_GT(world[0]->loss_bound().count(), 0);
}

TEST(ZmqMembership, SurvivorsAgreeOnMembersAndTheLeastStepAndLinkANewWorld) {
  auto world = make_zmq_world(4);
  world[2]->close();  // rank 2 is gone
  std::vector<MembershipChange> got(4);
  const std::vector<int64_t> committed{17, 18, 0, 17};  // rank 1 finished one step more
  commtest::run_ranks(4, [&](int r) {
    if (r == 2) return;
    MembershipInput in;
    in.committed_step = committed[static_cast<size_t>(r)];
    in.timeout = 10s;
    got[static_cast<size_t>(r)] = agree_membership(*world[static_cast<size_t>(r)], in);
  });
  for (int r : {0, 1, 3}) {
    const MembershipChange& c = got[static_cast<size_t>(r)];
    EXPECT_EQ(c.members, (std::vector<int>{0, 1, 3})) << "rank " << r;
    EXPECT_EQ(c.lost, std::vector<int>{2}) << "rank " << r;
    EXPECT_EQ(c.step, 17) << "rank " << r;
    ASSERT_TRUE(c.transport) << "rank " << r;
    EXPECT_EQ(c.transport->size(), 3);
  }
  EXPECT_EQ(got[0].rank, 0);
  EXPECT_EQ(got[1].rank, 1);
  EXPECT_EQ(got[3].rank, 2);
  // The new world carries messages around its ring.
  commtest::run_ranks(3, [&](int r) {
    const std::shared_ptr<Transport>& t = got[static_cast<size_t>(r == 2 ? 3 : r)].transport;
    t->send((r + 1) % 3, 1, Tensor::from_vector({1}, std::vector<int32_t>{r}));
    EXPECT_EQ(t->recv((r + 2) % 3, 1, 5s).i32()[0], (r + 2) % 3);
  });
}

TEST(ZmqMembership, ARankLostDuringTheAgreementIsLeftOutToo) {
  auto world = make_zmq_world(4);
  world[3]->close();
  std::vector<MembershipChange> got(4);
  commtest::run_ranks(4, [&](int r) {
    if (r == 3) return;
    if (r == 2) {  // takes part in nothing, then goes
      std::this_thread::sleep_for(200ms);
      world[2]->close();
      return;
    }
    MembershipInput in;
    in.committed_step = 5;
    in.timeout = 10s;
    got[static_cast<size_t>(r)] = agree_membership(*world[static_cast<size_t>(r)], in);
  });
  for (int r : {0, 1}) {
    EXPECT_EQ(got[static_cast<size_t>(r)].members, (std::vector<int>{0, 1})) << "rank " << r;
    EXPECT_EQ(got[static_cast<size_t>(r)].lost, (std::vector<int>{2, 3})) << "rank " << r;
    EXPECT_GE(got[static_cast<size_t>(r)].rounds, 1);
  }
}

TEST(ZmqMembership, ARankAloneAmongClosedPeersWasRemoved) {
  auto world = make_zmq_world(2);
  world[1]->close();  // what the others do once their new world is up
  const auto deadline = Clock::now() + 5s;
  while (world[0]->closed_peers().empty() && Clock::now() < deadline) std::this_thread::sleep_for(5ms);
  MembershipInput in;
  in.timeout = 2s;
  try {
    agree_membership(*world[0], in);
    ADD_FAILURE() << "a rank alone among closed peers went on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 was removed from the job"), std::string::npos) << e.what();
  }
}

TEST(ZmqMembership, ATransportThatCannotChangeIsRefused) {
  // inproc and mpi seed no next world, as a transport that keeps the default does.
  struct Fixed final : Transport {
    int rank() const override { return 0; }
    int size() const override { return 1; }
    std::string_view name() const override { return "fixed"; }
    void send(int, Tag, const Tensor&) override {}
    Tensor recv(int, Tag, std::chrono::milliseconds) override { throw PeerLost(0, "none"); }
    void close() override {}
  } fixed;
  try {
    agree_membership(fixed, MembershipInput{});
    ADD_FAILURE() << "agreed on a transport that cannot change";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("the fixed transport cannot change its members"), std::string::npos)
        << e.what();
  }
}


// Rejoin (docs/elastic.md): a replacement asks at rank 0's door; the members admit it at their
// agreement, and the new world of three carries messages between all of them.
TEST(ZmqMembershipJoin, AReplacementAskingAtTheDoorJoinsTheNextWorld) {
  ZmqOptions o;
  o.secret = "join-test-secret";
  auto world = make_zmq_world(2, o);
  std::unique_ptr<JoinDoor> door = world[0]->open_door();
  ASSERT_TRUE(door);
  std::shared_ptr<Transport> joiner;
  std::string joiner_error;
  std::thread replacement = catching(joiner_error, [&] { joiner = join_zmq_world(door->address(), 7, o, 20s); });
  const std::vector<JoinRequest> asked = requests_at(*door);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].label, 7);
  std::vector<MembershipChange> got(2);
  commtest::run_ranks(2, [&](int r) {
    MembershipInput in;
    in.committed_step = 5;
    in.timeout = 10s;
    in.labels = {3, 4};
    in.max_size = 3;
    if (r == 0) {
      in.door = door.get();
      in.joining = asked;
    }
    got[static_cast<size_t>(r)] = agree_membership(*world[static_cast<size_t>(r)], in);
  });
  replacement.join();
  ASSERT_TRUE(joiner) << joiner_error;
  for (const MembershipChange& c : got) {
    EXPECT_EQ(c.members, (std::vector<int>{0, 1}));
    EXPECT_EQ(c.joined, std::vector<int>{7});
    EXPECT_TRUE(c.lost.empty());
    ASSERT_TRUE(c.transport);
    EXPECT_EQ(c.transport->size(), 3);
  }
  EXPECT_EQ(joiner->rank(), 2);
  EXPECT_EQ(joiner->size(), 3);
  ASSERT_TRUE(joiner->admission());
  EXPECT_EQ(joiner->admission()->generation, 1u);
  EXPECT_EQ(joiner->admission()->labels, (std::vector<int>{3, 4, 7}));
  std::vector<std::shared_ptr<Transport>> next{got[0].transport, got[1].transport, joiner};
  commtest::run_ranks(3, [&](int r) {
    const auto& t = next[static_cast<size_t>(r)];
    t->send((r + 1) % 3, 11, Tensor::from_vector({1}, std::vector<int32_t>{r}));
    EXPECT_EQ(t->recv((r + 2) % 3, 11, 5s).i32()[0], (r + 2) % 3);
  });
  for (auto& t : next) t->close();
}

TEST(ZmqMembershipJoin, TheDoorRefusesAnotherSecretAndAClosedDoorRefusesAtOnce) {
  ZmqOptions o;
  o.secret = "join-test-secret";
  auto world = make_zmq_world(2, o);
  std::unique_ptr<JoinDoor> door = world[0]->open_door();
  ZmqOptions wrong = o;
  wrong.secret = "another-secret";
  const std::string address = door->address();
  std::thread poller([&] {  // the door's side of the handshake happens in its polls
    const auto end = Clock::now() + 3s;
    while (Clock::now() < end) {
      EXPECT_TRUE(door->poll().empty());
      std::this_thread::sleep_for(5ms);
    }
  });
  EXPECT_THROW(join_zmq_world(address, 1, wrong, 2s), Error);
  poller.join();
  // A joiner that asked, then the door went (the job ended): refused well before its wait.
  std::string error;
  std::thread late = catching(error, [&] { join_zmq_world(address, 1, o, 30s); });
  EXPECT_EQ(requests_at(*door).size(), 1u);
  const auto start = Clock::now();
  door.reset();
  late.join();
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  for (auto& t : world) t->close();
}

TEST(ZmqMembershipJoin, AJoinerReadiesBuffersOfTheSizesTheDoorExpectsBeforeItAsks) {
  ZmqOptions o;
  o.secret = "expect-test-secret";
  auto world = make_zmq_world(2, o);
  std::unique_ptr<JoinDoor> door = world[0]->open_door();
  ASSERT_TRUE(door);
  // 100 MiB: a 128 MiB buffer, a class no other test of this binary uses.
  door->expect({uint64_t{100} << 20});
  BufferPool& pool = BufferPool::global();
  const size_t before = pool.free_bytes();
  const std::string address = door->address();
  std::string error;
  std::thread replacement =
      catching(error, [&] { zmq::DoorClient(address, o.secret, 7).wait_admission(Clock::now() + 20s); });
  const std::vector<JoinRequest> asked = requests_at(*door);
  ASSERT_EQ(asked.size(), 1u);
  door->refuse(asked[0]);  // it asked once its buffers were ready
  replacement.join();
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  EXPECT_EQ(pool.free_bytes(), before + (size_t{128} << 20));
  for (auto& t : world) t->close();
}

}  // namespace
}  // namespace sf::comm
