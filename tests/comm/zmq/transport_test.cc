// The zmq transport's point-to-point contract (comm/transport.h) on real sockets, ipc and
// tcp: FIFO per (peer, tag), independent tags, fresh pooled buffers on receipt and the
// sender's reference given back, close and timeout as PeerLost naming the rank, sends that
// never block, and world creation through the rendezvous (threads standing in for processes).
#include <shardflow/comm/zmq/transport.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <tuple>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/zmq/handshake.h>
#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ZmqStats stats_of(const std::shared_ptr<Transport>& t) {
  return std::dynamic_pointer_cast<zmq::ZmqTransport>(t)->stats();
}

// Waits up to 5 s for the pool's outstanding count to come back to `want` (libzmq frees a
// sent payload on its own thread, just after the bytes have left).
bool pool_settles(size_t want) {
  const auto end = Clock::now() + 5s;
  while (BufferPool::global().outstanding() != want && Clock::now() < end) std::this_thread::sleep_for(1ms);
  return BufferPool::global().outstanding() == want;
}

class ZmqTransportTest : public ::testing::TestWithParam<ZmqScheme> {
 protected:
  ZmqOptions options() const {
    ZmqOptions o;
    o.scheme = GetParam();
    return o;
  }
};

TEST_P(ZmqTransportTest, DeliversFifoPerTagIntoFreshPooledBuffers) {
  const size_t outstanding = BufferPool::global().outstanding();
  auto world = make_zmq_world(2, options());
  const Tensor sent = Tensor::from_vector({2, 2}, std::vector<int32_t>{1, 2, 3, 4});
  for (int i = 0; i < 5; ++i) world[0]->send(1, 7, Tensor::full({3}, static_cast<float>(i)));
  world[0]->send(1, 8, sent);
  world[0]->send(1, 9, Tensor::scalar(2.5f));
  world[0]->send(1, 10, Tensor({0, 4}));
  // Tag 8 first: a receive never consumes another tag's messages.
  Tensor got = world[1]->recv(0, 8, 10s);
  EXPECT_EQ(got.shape(), (Shape{2, 2}));
  EXPECT_EQ(got.dtype(), DType::kI32);
  EXPECT_TRUE(bitwise_equal(got, sent));
  EXPECT_FALSE(got.shares_storage(sent));
  for (int i = 0; i < 5; ++i) {
    Tensor t = world[1]->recv(0, 7, 10s);
    EXPECT_EQ(t.to_vector(), std::vector<float>(3, static_cast<float>(i)));
    BufferPool::global().release(t);
  }
  Tensor s = world[1]->recv(0, 9, 10s);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.item(), 2.5f);
  EXPECT_EQ(world[1]->recv(0, 10, 10s).shape(), (Shape{0, 4}));
  BufferPool::global().release(got);
  BufferPool::global().release(s);
  const ZmqStats st = stats_of(world[1]);
  EXPECT_EQ(st.messages_received, 8u);
  EXPECT_EQ(st.malformed() + st.unauthenticated + st.refused_peers, 0u);
  EXPECT_TRUE(pool_settles(outstanding));
}

TEST_P(ZmqTransportTest, ReleasesTheSendersPooledReferenceOnceSent) {
  const size_t outstanding = BufferPool::global().outstanding();
  auto world = make_zmq_world(2, options());
  Tensor buf = BufferPool::global().acquire(DType::kF32, 1 << 16);
  buf.fill(3.0f);
  world[0]->send(1, 1, buf);  // the message holds the only reference now
  Tensor got = world[1]->recv(0, 1, 10s);
  EXPECT_EQ(got.numel(), 1 << 16);
  EXPECT_EQ(got.f32()[12345], 3.0f);
  BufferPool::global().release(got);
  EXPECT_TRUE(pool_settles(outstanding)) << "the sent buffer was not handed back";
}

TEST_P(ZmqTransportTest, SendsToItselfAndRefusesPeersOutsideTheWorld) {
  auto world = make_zmq_world(1, options());
  world[0]->send(0, 3, Tensor::full({2}, 1.0f));
  EXPECT_EQ(world[0]->recv(0, 3, 1s).to_vector(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_THROW(world[0]->send(1, 3, Tensor::full({2}, 1.0f)), InvalidArgument);
  EXPECT_THROW(world[0]->recv(-1, 3, 1s), InvalidArgument);
}

TEST_P(ZmqTransportTest, TimesOutAndReportsClosedPeersAfterTheirMessages) {
  auto world = make_zmq_world(3, options());
  const auto start = Clock::now();
  try {
    world[1]->recv(2, 5, 300ms);
    ADD_FAILURE() << "no timeout";
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_GE(Clock::now() - start, 300ms);
  }
  world[2]->send(1, 5, Tensor::full({4}, 9.0f));
  world[2]->close();
  EXPECT_EQ(world[1]->recv(2, 5, 10s).to_vector(), std::vector<float>(4, 9.0f));  // sent before close
  const auto t0 = Clock::now();
  try {
    world[1]->recv(2, 5, 60s);
    ADD_FAILURE() << "a closed peer's receive returned";
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), 2);
    EXPECT_NE(std::string(e.what()).find("rank 2 closed its endpoint"), std::string::npos) << e.what();
    EXPECT_LT(Clock::now() - t0, 5s);
  }
  EXPECT_THROW(world[2]->recv(0, 5, 60s), PeerLost);  // its own receives fail at once
  world[0]->send(2, 5, Tensor::full({1}, 1.0f));     // sends to a closed rank are dropped
  EXPECT_EQ(stats_of(world[1]).peers_lost, 0u) << "a close is not a loss";
}

TEST_P(ZmqTransportTest, SendsNeverBlockWhileNobodyReceivesAndTheRestFollowsInOrder) {
  auto world = make_zmq_world(2, options());
  // Both ranks send far more than the sockets hold before either receives: a send that
  // blocked on a full socket would deadlock here; instead the rest waits for the I/O thread.
  constexpr int kLarge = 12, kSmall = 200;
  const auto start = Clock::now();
  commtest::run_ranks(2, [&](int r) {
    for (int i = 0; i < kLarge; ++i) {
      world[r]->send(1 - r, 1, Tensor::full({1 << 20}, static_cast<float>(100 * r + i)));  // 4 MiB
      world[r]->send(1 - r, 2, Tensor::full({i % 3}, static_cast<float>(i)));
    }
    for (int i = 0; i < kSmall; ++i) world[r]->send(1 - r, 3, Tensor::full({7}, static_cast<float>(i)));
  });
  EXPECT_LT(Clock::now() - start, 5s) << "sends waited for receives";
  commtest::run_ranks(2, [&](int r) {
    for (int i = 0; i < kSmall; ++i) ASSERT_EQ(world[r]->recv(1 - r, 3, 10s).f32()[6], static_cast<float>(i));
    for (int i = 0; i < kLarge; ++i) {
      Tensor big = world[r]->recv(1 - r, 1, 10s);
      ASSERT_EQ(big.numel(), 1 << 20);
      ASSERT_EQ(big.f32()[0], static_cast<float>(100 * (1 - r) + i));
      ASSERT_EQ(big.f32()[(1 << 20) - 1], static_cast<float>(100 * (1 - r) + i));
      BufferPool::global().release(big);
      EXPECT_EQ(world[r]->recv(1 - r, 2, 10s).numel(), i % 3);
    }
  });
  EXPECT_GT(stats_of(world[0]).deferred_sends, 0u) << "48 MiB fitted in the socket without waiting";
  EXPECT_EQ(stats_of(world[1]).messages_received, static_cast<uint64_t>(2 * kLarge + kSmall));
}

TEST(ZmqOptionsTest, SettingsOutOfRangeAreRefusedBeforeAnySocketOpens) {
  for (const auto& [name, value, needle] :
       {std::tuple{"SF_ZMQ_SEGMENT_KB", "2", "outside 4 KiB .. 64 MiB"},
        std::tuple{"SF_ZMQ_SEGMENT_KB", "lots", "is not an integer"},
        std::tuple{"SF_ZMQ_SOCKET_BUFFER_KB", "-1", "outside 0 .. 1 GiB"},
        std::tuple{"SF_ZMQ_SOCKET_BUFFER_KB", "4194304", "outside 0 .. 1 GiB"}}) {
    ::setenv(name, value, 1);
    try {
      make_zmq_world(2);
      ADD_FAILURE() << name << "=" << value << " was taken";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    ::unsetenv(name);
  }
  ZmqOptions o;
  o.segment_bytes = 1 << 10;
  EXPECT_THROW(make_zmq_world(2, o), InvalidArgument);
  ::setenv("SF_ZMQ_SEGMENT_KB", "256", 1);  // in range: taken, and the transport reports it
  auto world = make_zmq_world(2);
  EXPECT_EQ(world[0]->segment_bytes(), 256 << 10);
  ::unsetenv("SF_ZMQ_SEGMENT_KB");
}

TEST_P(ZmqTransportTest, RefusesToSendOverThePayloadCap) {
  ZmqOptions o = options();
  o.max_payload_bytes = 1024;
  auto world = make_zmq_world(2, o);
  EXPECT_THROW(world[0]->send(1, 1, Tensor({257})), InvalidArgument);
  world[0]->send(1, 1, Tensor({256}));
  EXPECT_EQ(world[1]->recv(0, 1, 10s).numel(), 256);
}

INSTANTIATE_TEST_SUITE_P(Schemes, ZmqTransportTest, ::testing::Values(ZmqScheme::kIpc, ZmqScheme::kTcp),
                         [](const auto& info) { return info.param == ZmqScheme::kIpc ? "ipc" : "tcp"; });

std::string rendezvous_path() {
  static int n = 0;
  return fmt::format("ipc:///tmp/sf-zmq-rv-{}-{}-{}", ::getpid(), n++, zmq::random_secret().substr(0, 6));
}

ZmqJoin join_of(int rank, int size, const std::string& rv, const std::string& secret) {
  ZmqJoin j;
  j.rank = rank;
  j.size = size;
  j.rendezvous = rv;
  j.data_scheme = ZmqScheme::kTcp;
  j.options.secret = secret;
  j.options.connect_timeout = 5s;
  return j;
}

TEST(ZmqJoinTest, RanksFindEachOtherThroughTheRendezvous) {
  const std::string rv = rendezvous_path();
  std::vector<std::shared_ptr<Transport>> world(3);
  commtest::run_ranks(3, [&](int r) { world[r] = make_zmq_world(join_of(r, 3, rv, "s3cret")); });
  commtest::run_ranks(3, [&](int r) {
    for (int p = 0; p < 3; ++p) world[r]->send(p, 1, Tensor::full({1}, static_cast<float>(r)));
    for (int p = 0; p < 3; ++p) EXPECT_EQ(world[r]->recv(p, 1, 10s).item(), static_cast<float>(p));
  });
  const std::string ep = std::dynamic_pointer_cast<zmq::ZmqTransport>(world[1])->endpoint();
  EXPECT_EQ(ep.rfind("tcp://127.0.0.1:", 0), 0u) << ep;
}

TEST(ZmqJoinTest, NamesTheRanksThatNeverJoined) {
  const std::string rv = rendezvous_path();
  auto errors = commtest::run_ranks_collect(2, [&](int r) {
    ZmqJoin j = join_of(r, 4, rv, "s3cret");
    j.options.connect_timeout = 1s;
    make_zmq_world(j);
  });
  try {
    std::rethrow_exception(errors[0]);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank(s) 2, 3 did not join"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(errors[1]) << "rank 1 got a table for a world that never formed";
}

TEST(ZmqJoinTest, ARankWithAnotherSecretIsRefused) {
  const std::string rv = rendezvous_path();
  auto errors = commtest::run_ranks_collect(2, [&](int r) {
    ZmqJoin j = join_of(r, 2, rv, r == 0 ? "right" : "wrong");
    j.options.connect_timeout = 1s;
    make_zmq_world(j);
  });
  ASSERT_TRUE(errors[0] && errors[1]);
  try {
    std::rethrow_exception(errors[1]);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not prove the job secret"), std::string::npos) << e.what();
  }
}

TEST(ZmqJoinTest, ReadsTheLaunchersEnvironment) {
  ::setenv("SF_RANK", "2", 1);
  ::setenv("SF_WORLD_SIZE", "4", 1);
  ::setenv("SF_RENDEZVOUS", "tcp://10.1.2.3:29500", 1);
  ::setenv("SF_JOB_SECRET", "abc", 1);
  ZmqJoin j = zmq_join_from_env();
  EXPECT_EQ(j.rank, 2);
  EXPECT_EQ(j.size, 4);
  EXPECT_EQ(j.rendezvous, "tcp://10.1.2.3:29500");
  EXPECT_EQ(j.options.secret, "abc");
  ::setenv("SF_WORLD_SIZE", "4x", 1);
  EXPECT_THROW(zmq_join_from_env(), InvalidArgument);
  ::unsetenv("SF_JOB_SECRET");
  ::setenv("SF_WORLD_SIZE", "4", 1);
  try {
    zmq_join_from_env();
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("SF_JOB_SECRET"), std::string::npos);
  }
  for (const char* v : {"SF_RANK", "SF_WORLD_SIZE", "SF_RENDEZVOUS"}) ::unsetenv(v);
}

}  // namespace
}  // namespace sf::comm
