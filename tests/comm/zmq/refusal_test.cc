// Foreign peers against a running zmq job: while three ranks run collectives, sockets that do
// not hold the job secret connect to rank 0 — one fails the handshake, one claims a rank with
// the right secret while that rank is connected, one sends random bytes, one sends well-formed
// data without a handshake, others send one malformed frame set each (wrong frame count, byte
// count not matching the shape, a payload over the cap, an unknown sender), and a raw TCP
// client writes garbage that is not ZMTP at all. Each is refused or dropped, counted under its
// ZmqStats reason and logged with its address, and the job finishes with correct results.
// Raw connections to a rank's data-lane listener without the token it offered are refused too.
#include <zmq.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/comm/comm.h>
#include <shardflow/comm/zmq/handshake.h>
#include <shardflow/comm/zmq/header.h>
#include <shardflow/comm/zmq/lane.h>
#include <shardflow/comm/zmq/transport.h>
#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using zmq::Header;
using zmq::Kind;

constexpr uint64_t kCap = 1 << 20;

// A foreign DEALER connected to `endpoint`, speaking raw libzmq.
class Foreign {
 public:
  Foreign(void* ctx, const std::string& endpoint) : s_(zmq_socket(ctx, ZMQ_DEALER)) {
    const int linger = 0, timeout = 5000;
    zmq_setsockopt(s_, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s_, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    EXPECT_EQ(zmq_connect(s_, endpoint.c_str()), 0);
  }
  ~Foreign() { zmq_close(s_); }
  void send(const std::vector<std::vector<uint8_t>>& frames) {
    for (size_t i = 0; i < frames.size(); ++i)
      zmq_send(s_, frames[i].data(), frames[i].size(), i + 1 < frames.size() ? ZMQ_SNDMORE : 0);
  }
  void send(const Header& h) { send({zmq::encode_header(h)}); }
  Header recv() {
    std::vector<uint8_t> buf(4096);
    const int n = zmq_recv(s_, buf.data(), buf.size(), 0);
    EXPECT_GT(n, 0) << "no answer";
    return zmq::decode_header(buf.data(), static_cast<size_t>(std::max(n, 0)), {3, kCap});
  }

 private:
  void* s_;
};

Header data_header(int from, Shape shape, uint64_t nbytes) {
  Header h;
  h.kind = Kind::kData;
  h.from = from;
  h.tag = 1;
  h.shape = std::move(shape);
  h.nbytes = nbytes;
  return h;
}

// The handshake with `secret`, claiming `rank`; returns after sending the proof.
void handshake(Foreign& f, const std::string& secret, int rank) {
  const zmq::JobKey key(secret);
  const zmq::Nonce mine = zmq::fresh_nonce();
  Header hello;
  hello.kind = Kind::kHello;
  hello.from = rank;
  hello.auth.assign(mine.begin(), mine.end());
  f.send(hello);
  const Header challenge = f.recv();
  ASSERT_EQ(challenge.kind, Kind::kChallenge);
  zmq::Nonce theirs{};
  std::copy(challenge.auth.begin(), challenge.auth.begin() + zmq::kNonceBytes, theirs.begin());
  const zmq::Proof proof = key.prove('c', zmq::Purpose::kLink, mine, theirs, rank, 0);
  Header p;
  p.kind = Kind::kProof;
  p.from = rank;
  p.auth.assign(proof.begin(), proof.end());
  f.send(p);
}

// A raw TCP connection to tcp://127.0.0.1:port that writes `bytes` (if any) and closes.
void knock(const std::string& endpoint, const std::vector<uint8_t>& bytes) {
  const std::string hostport = endpoint.substr(6);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::stoi(hostport.substr(hostport.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && !bytes.empty()) {
    [[maybe_unused]] auto n = ::write(fd, bytes.data(), bytes.size());
  }
  std::this_thread::sleep_for(50ms);
  ::close(fd);
}

void attack(const std::string& endpoint, const std::string& secret) {
  void* ctx = zmq_ctx_new();
  {
    Foreign wrong_secret(ctx, endpoint);
    handshake(wrong_secret, "not the job secret", 2);
    Foreign hijack(ctx, endpoint);  // the right secret, but rank 1 is connected already
    handshake(hijack, secret, 1);
    Foreign random_bytes(ctx, endpoint);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 10; ++i) {
      std::vector<uint8_t> junk(1 + i * 37);
      for (auto& c : junk) x ^= x << 13, x ^= x >> 7, x ^= x << 17, c = static_cast<uint8_t>(x);
      random_bytes.send({junk});
    }
    const std::vector<uint8_t> payload(24, 0);
    Foreign no_handshake(ctx, endpoint);
    no_handshake.send({zmq::encode_header(data_header(1, {2, 3}, 24)), payload});
    Foreign frame_count(ctx, endpoint);
    frame_count.send({zmq::encode_header(data_header(1, {2, 3}, 24)), payload, payload});
    Foreign byte_count(ctx, endpoint);
    byte_count.send({zmq::encode_header(data_header(1, {2, 3}, 28)), payload});
    Foreign oversized(ctx, endpoint);
    oversized.send({zmq::encode_header(data_header(1, {int64_t{1} << 20}, uint64_t{4} << 20)), payload});
    Foreign unknown_sender(ctx, endpoint);
    unknown_sender.send({zmq::encode_header(data_header(7, {2, 3}, 24)), payload});
    std::this_thread::sleep_for(200ms);  // let the frames leave before the sockets close
  }
  zmq_ctx_term(ctx);
  // Not ZMTP at all: libzmq's own handshake drops it.
  const char garbage[] = "GET / HTTP/1.0\r\n\r\n\xff\xff\xff\xff\xff\xff\xff\xff";
  knock(endpoint, std::vector<uint8_t>(garbage, garbage + sizeof garbage));
}

TEST(ZmqRefusal, ForeignPeersAreRefusedCountedAndLoggedWhileTheJobGoesOn) {
  ZmqOptions o;
  o.scheme = ZmqScheme::kTcp;
  o.secret = "the job secret";
  o.max_payload_bytes = kCap;
  auto world = make_zmq_world(3, o);
  auto rank0 = std::dynamic_pointer_cast<zmq::ZmqTransport>(world[0]);
  const std::string endpoint = rank0->endpoint();

  ::testing::internal::CaptureStderr();
  std::atomic<bool> job_running{false}, attack_done{false};
  std::thread attacker([&] {
    while (!job_running) std::this_thread::yield();
    attack(endpoint, o.secret);
    attack_done = true;
  });
  std::vector<int> iterations(3, 0);
  // The attack starts once rank 0 has finished a round, and the ranks run collectives until
  // rank 0 has seen it end (its decision is broadcast each round), so every foreign frame
  // arrives while collectives are in flight.
  commtest::run_ranks(3, [&](int r) {
    Group g = world_group(world[r]);
    const Tensor x = Tensor::full({100'000}, static_cast<float>(r + 1));
    for (;;) {
      const Tensor sum = all_reduce(x, {.group = g, .timeout = 20s});
      ASSERT_EQ(sum.f32()[0], 6.0f);
      ASSERT_EQ(sum.f32()[99'999], 6.0f);
      const Tensor gathered = all_gather(Tensor::full({3}, static_cast<float>(r)), {.group = g, .timeout = 20s});
      ASSERT_EQ(gathered.to_vector(), (std::vector<float>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
      ++iterations[r];
      if (r == 0) job_running = true;
      const float go = r == 0 ? (attack_done ? 0.0f : 1.0f) : 0.0f;
      if (broadcast(Tensor::full({1}, go), {.group = g, .root = 0, .timeout = 20s}).item() == 0.0f) break;
    }
  });
  attacker.join();

  // The last frames may still be on their way through rank 0's I/O thread.
  const auto end = Clock::now() + 10s;
  ZmqStats st;
  while ((st = rank0->stats()).refused_peers < 8 && Clock::now() < end) std::this_thread::sleep_for(10ms);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_GE(iterations[0], 2) << "the attack did not overlap the collectives";
  EXPECT_EQ(st.refused_peers, 8u) << log;  // one per foreign connection
  EXPECT_EQ(st.bad_header, 10u) << log;    // the random frames: one connection, every frame counted
  EXPECT_EQ(st.unauthenticated, 1u) << log;
  EXPECT_EQ(st.bad_frame_count, 1u);
  EXPECT_EQ(st.bad_byte_count, 1u);
  EXPECT_EQ(st.oversized, 1u);
  EXPECT_EQ(st.bad_sender, 1u);
  EXPECT_EQ(st.peers_lost, 0u);
  for (const char* needle : {"refused a connection from 127.0.0.1 claiming rank 2: it does not prove the job secret",
                             "refused a connection from 127.0.0.1: rank 1 is already connected",
                             "refused a connection from 127.0.0.1: zmq header: not valid msgpack",
                             "refused a connection from 127.0.0.1: a data message before the handshake",
                             "payload of 4194304 bytes over the limit", "sender rank 7 outside a world of 3"})
    EXPECT_NE(log.find(needle), std::string::npos) << "missing from the log: " << needle << "\n" << log;
  // The job's own links saw nothing wrong.
  for (int r = 1; r < 3; ++r) {
    const ZmqStats other = std::dynamic_pointer_cast<zmq::ZmqTransport>(world[r])->stats();
    EXPECT_EQ(other.malformed() + other.refused_peers + other.unauthenticated + other.peers_lost, 0u);
  }
}

TEST(ZmqRefusal, LaneConnectionsWithoutTheOfferedTokenAreRefusedAndLogged) {
  ZmqOptions o;
  o.scheme = ZmqScheme::kTcp;
  auto world = make_zmq_world(2, o);
  auto rank0 = std::dynamic_pointer_cast<zmq::ZmqTransport>(world[0]);
  const std::string lane = rank0->lane_endpoint();
  ASSERT_EQ(lane.rfind("tcp://127.0.0.1:", 0), 0u) << lane;
  ::testing::internal::CaptureStderr();
  knock(lane, std::vector<uint8_t>(zmq::kLaneGreetingBytes, 0x41));  // not a greeting
  zmq::LaneToken guess{};
  guess.fill(7);
  const auto forged = zmq::lane_greeting(1, guess);  // rank 1's greeting with a guessed token
  knock(lane, {forged.begin(), forged.end()});
  const auto self = zmq::lane_greeting(0, guess);  // claims the listener's own rank
  knock(lane, {self.begin(), self.end()});
  knock(lane, {});  // says nothing and leaves
  const auto end = Clock::now() + 10s;
  while (rank0->stats().refused_peers < 4 && Clock::now() < end) std::this_thread::sleep_for(10ms);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rank0->stats().refused_peers, 4u) << log;
  for (const char* needle : {"refused a lane connection from 127.0.0.1: not a shardflow lane greeting",
                             "refused a lane connection from 127.0.0.1: it claims rank 1 without the token offered to it",
                             "refused a lane connection from 127.0.0.1: it claims rank 0",
                             "refused a lane connection from 127.0.0.1: closed before its greeting"})
    EXPECT_NE(log.find(needle), std::string::npos) << "missing from the log: " << needle << "\n" << log;
  // The real lanes were not disturbed.
  world[1]->send(0, 3, Tensor::full({1000}, 2.0f));
  EXPECT_EQ(world[0]->recv(1, 3, 10s).f32()[999], 2.0f);
  EXPECT_EQ(rank0->stats().peers_lost, 0u);
}

// A foreign peer at rank 0's rendezvous is refused and logged with its address.
TEST(ZmqRefusal, RendezvousRefusalsNameThePeerAddress) {
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);  // a free port, for the rendezvous
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(probe);
  ZmqJoin join;
  join.rank = 0;
  join.size = 2;
  join.rendezvous = "tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  join.options.secret = "the job secret";
  join.options.connect_timeout = 1500ms;
  ::testing::internal::CaptureStderr();
  std::thread rank0([&] { EXPECT_THROW(make_zmq_world(join), Error); });
  std::this_thread::sleep_for(200ms);
  void* ctx = zmq_ctx_new();
  {
    Foreign junk(ctx, join.rendezvous);
    junk.send({{0xc1, 0xc1, 0xc1}});
    std::this_thread::sleep_for(300ms);
  }
  zmq_ctx_term(ctx);
  rank0.join();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("refused a connection from 127.0.0.1: zmq header: not valid msgpack"), std::string::npos) << log;
  EXPECT_EQ(log.find("unknown address"), std::string::npos) << log;
}

}  // namespace
}  // namespace sf::comm
