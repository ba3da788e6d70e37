// NeighborExchange: ring exchanges over 2, 3, 4 and 8 ranks in f32 and i32 (including a
// zero-element tensor), a bidirectional exchange with two tensors per peer, the async form
// (results and errors), bad input refused before any message, a shape mismatch caught at
// receive naming the sender, and an absent neighbour named by the ranks that wait for it.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <tuple>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/comm.h>
#include "rank_threads.h"
#include "reference.h"
#include "refusal_fixture.h"
#include "wrappers.h"

namespace sf::comm {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace neighbor_exchange_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kTimeout = 300ms;

class NeighborExchangeRing : public ::testing::TestWithParam<std::tuple<int, DType, Shape>> {};

// Every rank sends its input to rank r+1 and receives rank r-1's; each output must equal the
// left neighbour's input bit for bit, and no pooled buffer may stay outstanding.
TEST_P(NeighborExchangeRing, EachRankGetsItsLeftNeighboursTensor) {
  // Plain copies, not a structured binding: clang 14 cannot capture bindings in a lambda.
  const int n = std::get<0>(GetParam());
  const DType dtype = std::get<1>(GetParam());
  const Shape shape = std::get<2>(GetParam());
  auto world = make_inproc_world(n);
  std::vector<Tensor> in(n), out(n);
  for (int r = 0; r < n; ++r) in[r] = commtest::make_input(shape, dtype, ReduceOp::kSum, r, 11);
  const size_t outstanding = BufferPool::global().outstanding();
  commtest::run_ranks(n, [&](int r) {
    Group g = world_group(world[r]);
    auto got = neighbor_exchange({in[r]}, {.group = g,
                                           .send_rank_ids = {(r + 1) % n},
                                           .recv_rank_ids = {(r + n - 1) % n},
                                           .recv_shapes = {shape},
                                           .send_shapes = {shape},
                                           .recv_type = dtype,
                                           .timeout = 5s});
    ASSERT_EQ(got.size(), 1u);
    out[r] = got[0];
  });
  for (int r = 0; r < n; ++r) EXPECT_TRUE(bitwise_equal(out[r], in[(r + n - 1) % n])) << "rank " << r;
  EXPECT_EQ(BufferPool::global().outstanding(), outstanding);
}

INSTANTIATE_TEST_SUITE_P(Sizes, NeighborExchangeRing,
                         ::testing::Combine(::testing::Values(2, 3, 4, 8), ::testing::Values(DType::kF32, DType::kI32),
                                            ::testing::Values(Shape{5, 3}, Shape{0, 4}, Shape{257})));

// Each rank sends two tensors of different shapes to each ring neighbour and receives them in
// an order that interleaves the peers: the k-th send to a peer pairs with the k-th receive.
TEST(NeighborExchange, BidirectionalTwoTensorsPerPeer) {
  const int n = 4;
  auto world = make_inproc_world(n);
  auto value = [](int from, int k) { return Tensor::full({k + 1, 2}, static_cast<float>(10 * from + k)); };
  std::vector<std::vector<Tensor>> out(n);
  commtest::run_ranks(n, [&](int r) {
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    Group g = world_group(world[r]);
    out[r] = neighbor_exchange({value(r, 0), value(r, 0), value(r, 1), value(r, 1)},
                               {.group = g,
                                .send_rank_ids = {right, left, right, left},
                                .recv_rank_ids = {left, right, right, left},
                                .recv_shapes = {{1, 2}, {1, 2}, {2, 2}, {2, 2}},
                                .send_shapes = {{1, 2}, {1, 2}, {2, 2}, {2, 2}},
                                .timeout = 5s});
  });
  for (int r = 0; r < n; ++r) {
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    ASSERT_EQ(out[r].size(), 4u);
    EXPECT_TRUE(bitwise_equal(out[r][0], value(left, 0))) << "rank " << r;
    EXPECT_TRUE(bitwise_equal(out[r][1], value(right, 0))) << "rank " << r;
    EXPECT_TRUE(bitwise_equal(out[r][2], value(right, 1))) << "rank " << r;
    EXPECT_TRUE(bitwise_equal(out[r][3], value(left, 1))) << "rank " << r;
  }
}

// The async form: two exchanges in flight on one group complete in program order, and the
// caller may overwrite its input once the handle is done.
TEST(NeighborExchange, AsyncFormReturnsTheReceivedList) {
  const int n = 3;
  auto world = make_inproc_world(n);
  std::vector<std::vector<Tensor>> first(n), second(n);
  commtest::run_ranks(n, [&](int r) {
    Group g = world_group(world[r]);
    NeighborExchangeOptions o{.group = g,
                              .send_rank_ids = {(r + 1) % n},
                              .recv_rank_ids = {(r + n - 1) % n},
                              .recv_shapes = {{3}},
                              .send_shapes = {{3}},
                              .recv_type = DType::kI32,
                              .timeout = 5s};
    Tensor x = Tensor::from_vector({3}, std::vector<int32_t>{r, r, r});
    NeighborExchangeWork a = neighbor_exchange_async({x}, o);
    NeighborExchangeWork b = neighbor_exchange_async({Tensor::from_vector({3}, std::vector<int32_t>{-r, 0, r})}, o);
    first[r] = a.get();
    x.fill(99.0f);
    second[r] = b.get();
    EXPECT_TRUE(a.done());
    EXPECT_FALSE(a.error());
  });
  for (int r = 0; r < n; ++r) {
    const int l = (r + n - 1) % n;
    EXPECT_EQ(first[r].at(0).to_vector(), (std::vector<float>{float(l), float(l), float(l)})) << "rank " << r;
    EXPECT_EQ(second[r].at(0).to_vector(), (std::vector<float>{float(-l), 0.0f, float(l)})) << "rank " << r;
  }
}

class NeighborExchangeValidation : public commtest::RefusalTest {
 protected:
  NeighborExchangeOptions good() const {
    return {.group = group_,
            .send_rank_ids = {1},
            .recv_rank_ids = {3},
            .recv_shapes = {{2}},
            .send_shapes = {{2}},
            .timeout = 100ms};
  }
};

const Tensor kX = Tensor::full({2}, 1.0f);

TEST_F(NeighborExchangeValidation, ListLengths) {
  auto o = good();
  o.send_shapes = {{2}, {2}};
  expect_refused([&] { neighbor_exchange({kX}, o); },
                 {"NeighborExchange", "send_rank_ids has 1 entries but send_shapes has 2"});
  o = good();
  o.recv_rank_ids = {3, 2};
  expect_refused([&] { neighbor_exchange({kX}, o); }, {"recv_rank_ids has 2 entries but recv_shapes has 1"});
  expect_refused([&] { neighbor_exchange({kX, kX}, good()); }, {"2 input tensors for 1 send_rank_ids"});
  expect_refused([&] { neighbor_exchange_async({}, good()); }, {"0 input tensors for 1 send_rank_ids"});
}

TEST_F(NeighborExchangeValidation, RankIds) {
  auto o = good();
  o.send_rank_ids = {4};
  expect_refused([&] { neighbor_exchange({kX}, o); }, {"NeighborExchange", "send_rank_ids[0] = 4", "[0, 4)"});
  o = good();
  o.recv_rank_ids = {-1};
  expect_refused([&] { neighbor_exchange({kX}, o); }, {"recv_rank_ids[0] = -1 is outside"});
  o = good();
  o.send_rank_ids = {0};
  expect_refused([&] { neighbor_exchange({kX}, o); }, {"send_rank_ids[0] = 0 is this rank itself"});
  o = good();
  o.recv_rank_ids = {0};
  expect_refused([&] { neighbor_exchange({kX}, o); }, {"recv_rank_ids[0] = 0 is this rank itself"});
}

TEST_F(NeighborExchangeValidation, ShapesAndOptions) {
  expect_refused([&] { neighbor_exchange({Tensor::full({3}, 1.0f)}, good()); },
                 {"input 0 is f32(3,) but send_shapes[0] is (2,)"});
  expect_refused([&] { neighbor_exchange({Tensor()}, good()); }, {"input 0 is undefined"});
  auto o = good();
  o.recv_shapes = {{2, -1}};
  expect_refused([&] { neighbor_exchange({kX}, o); }, {"recv_shapes[0] = (2, -1) has a negative dim"});
  o = good();
  o.timeout = 0ms;
  expect_refused([&] { neighbor_exchange({kX}, o); }, {"timeout 0 ms must be positive"});
  o = good();
  o.group = Group();
  expect_refused([&] { neighbor_exchange({kX}, o); }, {"options.group is not set"});
}

// Rank 1 sends a (3,) where rank 0 declared (2, 2): rank 0 fails at receive naming rank 1 and
// both shapes, and releases the message it refused.
TEST(NeighborExchange, ShapeMismatchAtReceiveNamesTheSender) {
  auto world = make_inproc_world(2);
  const size_t outstanding = BufferPool::global().outstanding();
  auto errors = commtest::run_ranks_collect(2, [&](int r) {
    Group g = world_group(world[r]);
    const Shape mine = r == 0 ? Shape{2, 2} : Shape{3};
    const Shape expect_from_peer = {2, 2};
    neighbor_exchange({Tensor(mine)}, {.group = g,
                                       .send_rank_ids = {1 - r},
                                       .recv_rank_ids = {1 - r},
                                       .recv_shapes = {expect_from_peer},
                                       .send_shapes = {mine},
                                       .timeout = kTimeout});
  });
  EXPECT_FALSE(errors[1]);
  ASSERT_TRUE(errors[0]);
  try {
    std::rethrow_exception(errors[0]);
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("NeighborExchange"), std::string::npos) << msg;
    EXPECT_NE(msg.find("recv_rank_ids[0] is rank 1, which sent f32(3,) but this rank declared f32(2, 2)"),
              std::string::npos)
        << msg;
  }
  EXPECT_EQ(BufferPool::global().outstanding(), outstanding);
}

// Rank 2 never calls: its two ring neighbours, which wait for it, name it within the timeout
// plus the notice grace; the others complete.
TEST(NeighborExchange, AbsentNeighbourIsNamed) {
  const int n = 4, absent = 2;
  auto world = make_inproc_world(n);
  const auto start = Clock::now();
  auto errors = commtest::run_ranks_collect(n, [&](int r) {
    if (r == absent) return;
    const int right = (r + 1) % n, left = (r + n - 1) % n;
    Group g = world_group(world[r]);
    neighbor_exchange({kX, kX}, {.group = g,
                                 .send_rank_ids = {right, left},
                                 .recv_rank_ids = {left, right},
                                 .recv_shapes = {{2}, {2}},
                                 .send_shapes = {{2}, {2}},
                                 .timeout = kTimeout});
  });
  EXPECT_LT(Clock::now() - start, 2500ms);
  EXPECT_FALSE(errors[0]);
  for (int r : {1, 3}) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    try {
      std::rethrow_exception(errors[r]);
    } catch (const PeerLost& e) {
      EXPECT_EQ(e.rank(), absent) << e.what();
      EXPECT_NE(std::string(e.what()).find("NeighborExchange"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 2 did not take part"), std::string::npos) << e.what();
    }
  }
}

// The async handle carries the PeerLost of an exchange whose peer never calls.
TEST(NeighborExchange, AsyncHandleCarriesPeerLost) {
  auto world = make_inproc_world(2);
  Group g = world_group(world[0]);
  NeighborExchangeWork w = neighbor_exchange_async({kX}, {.group = g,
                                                          .send_rank_ids = {1},
                                                          .recv_rank_ids = {1},
                                                          .recv_shapes = {{2}},
                                                          .send_shapes = {{2}},
                                                          .timeout = kTimeout});
  try {
    w.get();
    FAIL() << "get() returned";
  } catch (const PeerLost& e) {
    EXPECT_EQ(e.rank(), 1) << e.what();
  }
  EXPECT_TRUE(w.done());
  EXPECT_TRUE(w.error());
}

}  // namespace neighbor_exchange_test
}  // namespace
}  // namespace sf::comm
