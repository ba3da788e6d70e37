// NeighborExchangeV2: NCHW tiles of a global tensor on 2x2, 1x4 and 3x3 process grids (and a
// periodic 1x2 grid where one rank is both left and right neighbour) must each come back as
// the padded window cut from the serially assembled global tensor; MindSpore's documented
// example; the async form; bad input refused before any message; lengths inconsistent between
// neighbours caught at receive; an absent neighbour named.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <string>
#include <tuple>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/comm.h>
#include "rank_threads.h"
#include "refusal_fixture.h"
#include "wrappers.h"

namespace sf::comm {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace neighbor_exchange_v2_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Lens = std::vector<int64_t>;

constexpr auto kTimeout = 300ms;
// Row and column offsets of the 8 directions [top, top_right, right, bottom_right, bottom,
// bottom_left, left, top_left].
constexpr std::array<int, 8> kDy = {-1, -1, 0, 1, 1, 1, 0, -1};
constexpr std::array<int, 8> kDx = {0, 1, 1, 1, 0, -1, -1, -1};
constexpr int64_t kN = 2, kC = 2, kH = 3, kW = 4;  // tile shape

// A p x q grid of ranks (rank = i*q + j) over the global (N, C, p*H, q*W) tensor; columns
// wrap around if `wrap`.
struct Grid {
  int p, q;
  bool wrap = false;
  int size() const { return p * q; }
  int neighbour(int rank, int d) const {
    int i = rank / q + kDy[d], j = rank % q + kDx[d];
    if (wrap) j = (j + q) % q;
    return i < 0 || i >= p || j < 0 || j >= q ? -1 : i * q + j;
  }
  std::vector<int> neighbours(int rank) const {
    std::vector<int> ids(8);
    for (int d = 0; d < 8; ++d) ids[d] = neighbour(rank, d);
    return ids;
  }
};

// Global element (n, c, y, x): a distinct small integer, exact in f32.
int32_t global_at(const Grid& g, int64_t n, int64_t c, int64_t y, int64_t x) {
  return static_cast<int32_t>(((n * kC + c) * g.p * kH + y) * g.q * kW + x + 1);
}

// Rank r's tile of the global tensor.
Tensor tile_of(const Grid& g, int r, DType dtype) {
  Tensor t({kN, kC, kH, kW}, DType::kI32);
  int32_t* p = t.i32();
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t y = 0; y < kH; ++y)
        for (int64_t x = 0; x < kW; ++x) *p++ = global_at(g, n, c, (r / g.q) * kH + y, (r % g.q) * kW + x);
  if (dtype == DType::kI32) return t;
  Tensor f({kN, kC, kH, kW}, DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i) f.f32()[i] = static_cast<float>(t.i32()[i]);
  return f;
}

// recv_lens on the sides of rank r that have a neighbour, 0 on the others (MindSpore's shape).
Lens effective(const Grid& g, int r, const Lens& recv) {
  const auto ids = g.neighbours(r);
  const int side_dir[4] = {0, 4, 6, 2};  // top, bottom, left, right
  Lens e = recv;
  for (int i = 0; i < 4; ++i)
    if (ids[side_dir[i]] < 0) e[i] = 0;
  return e;
}

// The expected output of rank r: the window of the global tensor around its tile, recv_lens
// wide on each side that has a neighbour.
std::vector<float> window_of(const Grid& g, int r, const Lens& recv_lens) {
  const Lens recv = effective(g, r, recv_lens);
  const int64_t oh = recv[0] + kH + recv[1], ow = recv[2] + kW + recv[3], gw = g.q * kW;
  std::vector<float> out;
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t gy = (r / g.q) * kH - recv[0] + y;
          int64_t gx = (r % g.q) * kW - recv[2] + x;
          if (g.wrap) gx = (gx + gw) % gw;
          const bool inside = gy >= 0 && gy < g.p * kH && gx >= 0 && gx < gw;
          out.push_back(inside ? static_cast<float>(global_at(g, n, c, gy, gx)) : 0.0f);
        }
  return out;
}

// What a rank must receive when every rank sends `send`: its top halo is its top
// neighbour's bottom rows, and so on.
Lens mirrored(const Lens& send) { return {send[1], send[0], send[3], send[2]}; }

void expect_windows(const Grid& g, const Lens& send, DType dtype) {
  const int n = g.size();
  const Lens recv = mirrored(send);
  auto world = make_inproc_world(n);
  std::vector<Tensor> out(n);
  const size_t outstanding = BufferPool::global().outstanding();
  commtest::run_ranks(n, [&](int r) {
    Group grp = world_group(world[r]);
    out[r] = neighbor_exchange_v2(tile_of(g, r, dtype), {.group = grp,
                                                         .send_rank_ids = g.neighbours(r),
                                                         .send_lens = send,
                                                         .recv_rank_ids = g.neighbours(r),
                                                         .recv_lens = recv,
                                                         .timeout = 5s});
  });
  for (int r = 0; r < n; ++r) {
    const Lens e = effective(g, r, recv);
    ASSERT_EQ(out[r].shape(), (Shape{kN, kC, e[0] + kH + e[1], e[2] + kW + e[3]})) << "rank " << r;
    EXPECT_EQ(out[r].dtype(), dtype);
    EXPECT_EQ(out[r].to_vector(), window_of(g, r, recv)) << "rank " << r << " of " << g.p << "x" << g.q;
  }
  EXPECT_EQ(BufferPool::global().outstanding(), outstanding);
}

class NeighborExchangeV2Grid : public ::testing::TestWithParam<std::tuple<std::pair<int, int>, Lens, DType>> {};

TEST_P(NeighborExchangeV2Grid, EachTileGetsItsPaddedWindow) {
  const auto [shape, send, dtype] = GetParam();
  expect_windows({shape.first, shape.second}, send, dtype);
}

INSTANTIATE_TEST_SUITE_P(Grids, NeighborExchangeV2Grid,
                         ::testing::Combine(::testing::Values(std::pair{2, 2}, std::pair{1, 4}, std::pair{3, 3}),
                                            ::testing::Values(Lens{1, 1, 1, 1}, Lens{2, 2, 2, 2}, Lens{1, 2, 2, 1},
                                                              Lens{0, 2, 1, 0}),
                                            ::testing::Values(DType::kF32, DType::kI32)));

// Columns wrap on a 1x2 grid: each rank's left and right neighbour is the other rank, and
// the slots keep its two halos apart.
TEST(NeighborExchangeV2, PeriodicOneByTwoGridSameNeighbourBothSides) {
  expect_windows({1, 2, true}, {0, 0, 1, 2}, DType::kF32);
}

// MindSpore's documented example: two ranks stacked vertically, one row each way.
TEST(NeighborExchangeV2, MindSporeExample) {
  auto world = make_inproc_world(2);
  std::vector<Tensor> out(2);
  commtest::run_ranks(2, [&](int r) {
    Group g = world_group(world[r]);
    std::vector<int> ids(8, -1);
    ids[r == 0 ? 4 : 0] = 1 - r;
    const Lens lens = r == 0 ? Lens{0, 1, 0, 0} : Lens{1, 0, 0, 0};
    out[r] = neighbor_exchange_v2(
        Tensor::full({1, 1, 2, 2}, r == 0 ? 1.0f : 2.0f),
        {.group = g, .send_rank_ids = ids, .send_lens = lens, .recv_rank_ids = ids, .recv_lens = lens, .timeout = 5s});
  });
  EXPECT_EQ(out[0].shape(), (Shape{1, 1, 3, 2}));
  EXPECT_EQ(out[0].to_vector(), (std::vector<float>{1, 1, 1, 1, 2, 2}));
  EXPECT_EQ(out[1].shape(), (Shape{1, 1, 3, 2}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<float>{1, 1, 2, 2, 2, 2}));
}

// The async form on a 2x2 grid: two exchanges in flight, results in program order.
TEST(NeighborExchangeV2, AsyncForm) {
  const Grid g{2, 2};
  const Lens send{1, 2, 1, 2}, recv = mirrored(send);
  auto world = make_inproc_world(4);
  std::vector<Tensor> first(4), second(4);
  commtest::run_ranks(4, [&](int r) {
    Group grp = world_group(world[r]);
    NeighborExchangeV2Options o{.group = grp,
                                .send_rank_ids = g.neighbours(r),
                                .send_lens = send,
                                .recv_rank_ids = g.neighbours(r),
                                .recv_lens = recv,
                                .timeout = 5s};
    Work a = neighbor_exchange_v2_async(tile_of(g, r, DType::kF32), o);
    Work b = neighbor_exchange_v2_async(tile_of(g, r, DType::kI32), o);
    first[r] = a.get();
    second[r] = b.get();
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(first[r].dtype(), DType::kF32);
    EXPECT_EQ(second[r].dtype(), DType::kI32);
    EXPECT_EQ(first[r].to_vector(), window_of(g, r, recv)) << "rank " << r;
    EXPECT_EQ(second[r].to_vector(), window_of(g, r, recv)) << "rank " << r;
  }
}

class NeighborExchangeV2Validation : public commtest::RefusalTest {
 protected:
  // Rank 0 of a 2x2 grid.
  NeighborExchangeV2Options good() const {
    const std::vector<int> ids = Grid{2, 2}.neighbours(0);
    return {.group = group_,
            .send_rank_ids = ids,
            .send_lens = {1, 1, 1, 1},
            .recv_rank_ids = ids,
            .recv_lens = {1, 1, 1, 1},
            .timeout = 100ms};
  }
};

const Tensor kTile = Tensor::full({kN, kC, kH, kW}, 1.0f);

TEST_F(NeighborExchangeV2Validation, LengthsInconsistentWithTheShape) {
  auto o = good();
  o.send_lens = {4, 1, 1, 1};
  expect_refused([&] { neighbor_exchange_v2(kTile, o); },
                 {"NeighborExchangeV2", "send_lens[0] (top) = 4 is larger than H 3", "f32(2, 2, 3, 4)",
                  "inconsistent with the shape"});
  o.send_lens = {1, 1, 1, 5};
  expect_refused([&] { neighbor_exchange_v2_async(kTile, o); }, {"send_lens[3] (right) = 5 is larger than W 4"});
}

TEST_F(NeighborExchangeV2Validation, ListLengthsAndNegativeLens) {
  auto o = good();
  o.send_rank_ids.pop_back();
  expect_refused([&] { neighbor_exchange_v2(kTile, o); },
                 {"NeighborExchangeV2", "send_rank_ids has 7 entries; it needs 8"});
  o = good();
  o.recv_rank_ids.push_back(-1);
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"recv_rank_ids has 9 entries"});
  o = good();
  o.send_lens = {1, 1, 1};
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"send_lens has 3 entries; it needs 4"});
  o = good();
  o.recv_lens = {1, -1, 1, 1};
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"recv_lens[1] (bottom) = -1 is negative"});
  o = good();
  o.send_lens = {1, 1, -2, 1};
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"send_lens[2] (left) = -2 is negative"});
}

TEST_F(NeighborExchangeV2Validation, RankIds) {
  auto o = good();
  o.send_rank_ids[2] = 4;
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"send_rank_ids[2] (right) = 4 is neither -1 nor", "[0, 4)"});
  o = good();
  o.recv_rank_ids[0] = -2;
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"recv_rank_ids[0] (top) = -2"});
  o = good();
  o.send_rank_ids[4] = 0;
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"send_rank_ids[4] (bottom) = 0 is this rank itself"});
}

TEST_F(NeighborExchangeV2Validation, CornerNeedsBothSidesAsInMindSpore) {
  auto o = good();  // rank 0 of 2x2: right 1, bottom_right 3, bottom 2
  o.recv_rank_ids[3] = -1;
  expect_refused([&] { neighbor_exchange_v2(kTile, o); },
                 {"recv_rank_ids[3] (bottom_right) = -1 but recv_rank_ids[2] (right) = 1 and recv_rank_ids[4] (bottom) "
                  "= 2; a corner has a neighbour exactly when both sides next to it have one"});
  o = good();
  o.recv_rank_ids[1] = 3;  // top_right, with no top neighbour
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"recv_rank_ids[1] (top_right) = 3 but recv_rank_ids[0] (top) = -1"});
}

TEST_F(NeighborExchangeV2Validation, InputAndFormat) {
  expect_refused(
      [&] {
        neighbor_exchange_v2(Tensor::full({2, 3, 4}, 1.0f), good());
      },
      {"NeighborExchangeV2", "input f32(2, 3, 4) is not 4-D"});
  expect_refused([&] { neighbor_exchange_v2(Tensor(), good()); }, {"undefined"});
  auto o = good();
  o.data_format = "NHWC";
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"data_format 'NHWC' is not supported"});
  o = good();
  o.timeout = -1ms;
  expect_refused([&] { neighbor_exchange_v2(kTile, o); }, {"timeout -1 ms must be positive"});
}

// Rank 1 (the bottom one) sends 1 row up, but rank 0 declared it receives 2 rows from below:
// rank 0 fails at receive naming rank 1 and both shapes, and releases the refused message.
TEST(NeighborExchangeV2, LengthsInconsistentBetweenNeighboursFailAtReceive) {
  auto world = make_inproc_world(2);
  const size_t outstanding = BufferPool::global().outstanding();
  auto errors = commtest::run_ranks_collect(2, [&](int r) {
    Group g = world_group(world[r]);
    std::vector<int> ids(8, -1);
    ids[r == 0 ? 4 : 0] = 1 - r;
    neighbor_exchange_v2(kTile, {.group = g,
                                 .send_rank_ids = ids,
                                 .send_lens = {1, 1, 0, 0},
                                 .recv_rank_ids = ids,
                                 .recv_lens = r == 0 ? Lens{0, 2, 0, 0} : Lens{1, 0, 0, 0},
                                 .timeout = kTimeout});
  });
  EXPECT_FALSE(errors[1]);
  ASSERT_TRUE(errors[0]);
  try {
    std::rethrow_exception(errors[0]);
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("NeighborExchangeV2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("recv_rank_ids[4] (bottom) is rank 1, which sent f32(2, 2, 1, 4) but this rank declared "
                       "f32(2, 2, 2, 4)"),
              std::string::npos)
        << msg;
  }
  EXPECT_EQ(BufferPool::global().outstanding(), outstanding);
}

// Rank 3 of a 2x2 grid never calls: the three others, each of which waits for it (as its
// bottom_right, bottom or right neighbour), name it within the timeout plus the notice grace.
TEST(NeighborExchangeV2, AbsentNeighbourIsNamed) {
  const Grid g{2, 2};
  const int absent = 3;
  auto world = make_inproc_world(4);
  const auto start = Clock::now();
  auto errors = commtest::run_ranks_collect(4, [&](int r) {
    if (r == absent) return;
    Group grp = world_group(world[r]);
    neighbor_exchange_v2(kTile, {.group = grp,
                                 .send_rank_ids = g.neighbours(r),
                                 .send_lens = {1, 1, 1, 1},
                                 .recv_rank_ids = g.neighbours(r),
                                 .recv_lens = {1, 1, 1, 1},
                                 .timeout = kTimeout});
  });
  EXPECT_LT(Clock::now() - start, 2500ms);
  for (int r : {0, 1, 2}) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    try {
      std::rethrow_exception(errors[r]);
    } catch (const PeerLost& e) {
      EXPECT_EQ(e.rank(), absent) << e.what();
      EXPECT_NE(std::string(e.what()).find("NeighborExchangeV2"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 3 did not take part"), std::string::npos) << e.what();
    }
  }
}

}  // namespace neighbor_exchange_v2_test
}  // namespace
}  // namespace sf::comm
