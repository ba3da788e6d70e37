// Resharding a tensor from (layout A, M ranks) to (layout B, N ranks): shard boxes, pinned
// plans (pieces, runs, the holder chosen among replicas), a seeded property test over random
// device matrices, tensor maps, shapes and dtypes whose oracle is gather-then-split, seed
// 001's layouts to 1 and 3 devices, empty and one-element tensors, and the refusals.
#include <shardflow/parallel/reshard.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/shard_box.h>
#include <shardflow/parallel/sharding/local_block.h>
#include <shardflow/parallel/strategy.h>

#include "tests/parallel/random_layouts.h"

namespace sf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

// A tensor of `shape` whose elements are all different bit patterns (seeded).
Tensor distinct(const Shape& shape, DType dtype, uint32_t seed) {
  Tensor t(shape, dtype);
  std::mt19937 rng(seed);
  auto* words = static_cast<uint32_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) words[i] = static_cast<uint32_t>(i) * 2654435761u ^ (rng() & 0xFFFF0000u);
  return t;
}

// Each rank's local block of `whole` under `layout`: the split of gather-then-split.
std::vector<Tensor> split(const Tensor& whole, const TensorLayout& layout) {
  std::vector<Tensor> out;
  for (int64_t r = 0; r < layout.mesh().device_count(); ++r) out.push_back(local_block(whole, layout, r).clone());
  return out;
}

// Reshards `whole`, split under `from`, to `to`, and checks every target block bitwise against
// `whole` split under `to` directly, and that each target rank reads exactly its shard bytes
// (counted through copy_runs, and every source range inside its rank's block).
void expect_reshards(const Tensor& whole, const TensorLayout& from, const TensorLayout& to, const std::string& what) {
  const std::vector<Tensor> sources = split(whole, from);
  const std::vector<Tensor> want = split(whole, to);
  const std::vector<Tensor> got = reshard(sources, whole.shape(), from, to);
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t t = 0; t < want.size(); ++t)
    EXPECT_TRUE(bitwise_equal(got[t], want[t])) << what << ": target rank " << t << " " << got[t].describe();
  const ReshardPlan plan = plan_reshard(whole.shape(), whole.dtype(), from, to);
  ASSERT_EQ(plan.targets.size(), want.size()) << what;
  for (const TargetPlan& t : plan.targets) {
    EXPECT_EQ(t.shard_bytes, static_cast<int64_t>(want[t.target_rank].nbytes())) << what;
    EXPECT_EQ(t.bytes_read(), t.shard_bytes) << what << ": target rank " << t.target_rank;
    int64_t counted = 0;
    std::vector<char> block(static_cast<size_t>(t.shard_bytes));
    copy_runs(
        t,
        [&](int rank, int64_t offset, int64_t bytes, void* dst) {
          const Tensor& src = sources[static_cast<size_t>(rank)];
          ASSERT_LE(offset + bytes, static_cast<int64_t>(src.nbytes())) << what << ": source rank " << rank;
          std::memcpy(dst, static_cast<const char*>(src.raw()) + offset, static_cast<size_t>(bytes));
          counted += bytes;
        },
        block.data(), t.shard_bytes);
    EXPECT_EQ(counted, t.shard_bytes) << what << ": target rank " << t.target_rank;
  }
}

// ---- shard boxes ----

const Layout kSeed({2, 2, 2}, {"dp", "sp", "mp"});

TEST(ReshardShardBox, Seed001RankHoldsRowBlockMpAndColumnBlockSpDp) {
  const TensorLayout a = kSeed("mp", {"sp", "dp"});
  // Rank 6 is dp=1, sp=1, mp=0: row block 0, column block sp*2 + dp = 3.
  EXPECT_EQ(shard_box(a, {4, 8}, 6), (ShardBox{{{0, 2}, {6, 2}}}));
  EXPECT_EQ(shard_box(a, {4, 8}, 6).str(), "[0:2, 6:8]");
  EXPECT_THAT(shard_box(a, {4, 8}, 6).shape(), ElementsAre(2, 2));
  // Replicated dims are whole.
  EXPECT_EQ(shard_box(kSeed("None", "None"), {4, 8}, 5), (ShardBox{{{0, 4}, {0, 8}}}));
  EXPECT_EQ(shard_box(TensorLayout(DeviceMatrix({3}), {}), {}, 2).numel(), 1);
}

TEST(ReshardShardBox, IntersectionIsEmptyWhereBoxesDoNotMeet) {
  const ShardBox a{{{0, 4}, {2, 4}}};
  const ShardBox b{{{2, 4}, {4, 4}}};
  EXPECT_EQ(intersect(a, b), (ShardBox{{{2, 2}, {4, 2}}}));
  EXPECT_TRUE(intersect(a, ShardBox{{{4, 2}, {0, 8}}}).empty());
}

// ---- pinned plans ----

// The header's example: 4x6 split (2,1) on 2 ranks, loaded split (1,3) on 3 ranks.
TEST(ReshardPlan, RowsToColumnsTakesTwoRunsFromEachSource) {
  const TargetPlan t = plan_reshard_target({4, 6}, DType::kF32, strategy_to_layout({2, 1}, 2),
                                           strategy_to_layout({1, 3}, 3), 1);
  EXPECT_EQ(t.box, (ShardBox{{{0, 4}, {2, 2}}}));
  EXPECT_EQ(t.shard_bytes, 32);
  ASSERT_EQ(t.pieces.size(), 2u);
  EXPECT_EQ(t.pieces[0].source_rank, 0);
  EXPECT_EQ(t.pieces[0].box, (ShardBox{{{0, 2}, {2, 2}}}));
  // Source rank 0 holds rows 0..1 (24 bytes each); columns 2..3 start at byte 8.
  EXPECT_THAT(t.pieces[0].runs, ElementsAre(ByteRun{8, 0, 8}, ByteRun{32, 8, 8}));
  EXPECT_EQ(t.pieces[1].source_rank, 1);
  EXPECT_THAT(t.pieces[1].runs, ElementsAre(ByteRun{8, 16, 8}, ByteRun{32, 24, 8}));
}

TEST(ReshardPlan, AWholeBlockIsOneRun) {
  const TensorLayout rows = strategy_to_layout({4, 1, 1}, 4);
  const ReshardPlan same = plan_reshard({8, 3, 5}, DType::kI32, rows, rows);
  for (const TargetPlan& t : same.targets) {
    ASSERT_EQ(t.pieces.size(), 1u);
    EXPECT_EQ(t.pieces[0].source_rank, t.target_rank);
    EXPECT_THAT(t.pieces[0].runs, ElementsAre(ByteRun{0, 0, 2 * 3 * 5 * 4}));
  }
  // Four row blocks into one device: four runs, each a whole source block.
  const TargetPlan one = plan_reshard_target({8, 3, 5}, DType::kF32, rows, strategy_to_layout({1, 1, 1}, 1), 0);
  ASSERT_EQ(one.pieces.size(), 4u);
  for (int r = 0; r < 4; ++r)
    EXPECT_THAT(one.pieces[r].runs, ElementsAre(ByteRun{0, r * 120, 120})) << "source rank " << r;
}

// A tensor replicated on 4 ranks, loaded by 4 ranks whole: each reads from another holder.
TEST(ReshardPlan, ReplicasAreReadFromHoldersInTurn) {
  const TensorLayout everywhere = TensorLayout::replicated(DeviceMatrix({4}), 2);
  const ReshardPlan plan = plan_reshard({3, 5}, DType::kF32, everywhere, everywhere);
  std::vector<int> read_from;
  for (const TargetPlan& t : plan.targets) {
    ASSERT_EQ(t.pieces.size(), 1u);
    read_from.push_back(t.pieces[0].source_rank);
  }
  EXPECT_THAT(read_from, ElementsAre(0, 1, 2, 3));
  // Seed 001's weight layout (('sp','dp'), None) is replicated on mp: one device loading it
  // whole takes block b from holder b mod 2 of its pair, so both ranks of a pair serve.
  const TargetPlan one =
      plan_reshard_target({8, 6}, DType::kF32, kSeed({"sp", "dp"}, "None"), strategy_to_layout({1, 1}, 1), 0);
  std::vector<int> sources;
  for (const ReshardPiece& p : one.pieces) sources.push_back(p.source_rank);
  // Block b = sp*2 + dp sits on ranks dp*4 + sp*2 + {0, 1}: b=0 on 0,1; 1 on 4,5; 2 on 2,3; 3 on 6,7.
  EXPECT_THAT(sources, ElementsAre(0, 2, 5, 7));
}

// ---- the property test ----

using layouttest::random_layout;
using layouttest::random_mesh;

struct Case {
  int64_t m;
  int64_t n;
};

TEST(ReshardProperty, RandomLayoutsAndRankCountsEqualGatherThenSplit) {
  std::mt19937 rng(20240518);
  // Pairs without a common factor first, then random pairs from 1..12.
  std::vector<Case> cases{{3, 8}, {6, 4}, {5, 1}, {1, 7}, {8, 3}, {7, 12}, {11, 4}, {9, 10}, {12, 5}, {1, 1}};
  while (cases.size() < 240) {
    const auto m = static_cast<int64_t>(rng() % 12 + 1);
    cases.push_back({m, static_cast<int64_t>(rng() % 12 + 1)});
  }
  int coprime = 0;
  int empty = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case c = cases[i];
    const int dims = static_cast<int>(rng() % 4);  // 0 (a scalar) to 3
    const TensorLayout from = random_layout(DeviceMatrix(random_mesh(c.m, rng)), dims, rng);
    const TensorLayout to = random_layout(DeviceMatrix(random_mesh(c.n, rng)), dims, rng);
    Shape global;
    for (int d = 0; d < dims; ++d) {
      const int64_t multiple = rng() % 20 == 0 ? 0 : static_cast<int64_t>(rng() % 3 + 1);
      global.push_back(std::lcm(from.splits(d), to.splits(d)) * multiple);
    }
    const DType dtype = rng() % 2 == 0 ? DType::kF32 : DType::kI32;
    const Tensor whole = distinct(global, dtype, static_cast<uint32_t>(i));
    coprime += std::gcd(c.m, c.n) == 1 && c.m > 1 && c.n > 1;
    empty += whole.numel() == 0;
    expect_reshards(whole, from, to,
                    "case " + std::to_string(i) + ": " + from.str() + " -> " + to.str() + " of " + whole.describe());
    if (HasFailure()) return;
  }
  EXPECT_GE(coprime, 20);
  EXPECT_GE(empty, 3);
}

// ---- seed 001's layouts ----

// examples/operator_parallel.cc on 8 devices: matmul1's input x ('mp', ('sp','dp')) and weight
// (('sp','dp'), None), relu1 (4,1), matmul2's weight ('tp', None) on (8).
std::vector<std::pair<TensorLayout, Shape>> seed001() {
  const Layout layout2({8}, {"tp"});
  return {{kSeed("mp", {"sp", "dp"}), {96, 784}},
          {kSeed({"sp", "dp"}, "None"), {784, 512}},
          {strategy_to_layout({4, 1}, 8), {96, 512}},
          {layout2("tp", "None"), {512, 512}}};
}

TEST(ReshardSeed001, EightRanksToOneDevice) {
  for (const auto& [from, shape] : seed001())
    expect_reshards(distinct(shape, DType::kF32, 1), from, strategy_to_layout({1, 1}, 1), from.str() + " -> 1 device");
}

TEST(ReshardSeed001, EightRanksToThreeDevices) {
  for (const auto& [from, shape] : seed001()) {
    const Tensor whole = distinct(shape, DType::kF32, 3);
    // Data parallel on 3 devices (every rank whole), and split 3 ways where the rows allow.
    expect_reshards(whole, from, TensorLayout::replicated(DeviceMatrix({3}), 2), from.str() + " -> replicated on 3");
    if (shape[0] % 3 == 0) expect_reshards(whole, from, strategy_to_layout({3, 1}, 3), from.str() + " -> (3,1)");
  }
  // And back: x split (3,1) on 3 devices to seed 001's layout on 8.
  const Tensor x = distinct({96, 784}, DType::kI32, 4);
  expect_reshards(x, strategy_to_layout({3, 1}, 3), kSeed("mp", {"sp", "dp"}), "(3,1) on 3 -> seed 001's x");
}

// ---- empty and one-element tensors ----

TEST(ReshardEdges, EmptyTensorsPlanNothingToRead) {
  const ReshardPlan plan =
      plan_reshard({0, 6}, DType::kF32, strategy_to_layout({2, 3}, 6), strategy_to_layout({1, 1}, 5));
  for (const TargetPlan& t : plan.targets) {
    EXPECT_TRUE(t.pieces.empty());
    EXPECT_EQ(t.shard_bytes, 0);
  }
  expect_reshards(Tensor({0, 6}, DType::kF32), strategy_to_layout({2, 3}, 6), strategy_to_layout({1, 3}, 3), "empty");
}

TEST(ReshardEdges, OneElementAndScalars) {
  expect_reshards(distinct({1}, DType::kI32, 5), strategy_to_layout({1}, 4), strategy_to_layout({1}, 7), "1 element");
  const TensorLayout scalar3(DeviceMatrix({3}), {});
  const TensorLayout scalar2(DeviceMatrix({2}), {});
  expect_reshards(distinct({}, DType::kF32, 6), scalar3, scalar2, "scalar");
  const TargetPlan t = plan_reshard_target({}, DType::kF32, scalar3, scalar2, 1);
  ASSERT_EQ(t.pieces.size(), 1u);
  EXPECT_EQ(t.pieces[0].source_rank, 1);
  EXPECT_THAT(t.pieces[0].runs, ElementsAre(ByteRun{0, 0, 4}));
}

// ---- refusals ----

TEST(ReshardErrors, PartialLayoutsAreRefused) {
  const TensorLayout partial(DeviceMatrix({4, 2}), {{0}, {}}, {1});
  const TensorLayout rows = strategy_to_layout({2, 1}, 2);
  EXPECT_EQ(error_of([&] { plan_reshard({8, 4}, DType::kF32, partial, rows); }),
            "reshard source: layout (0, None) on (4,2) partial (1) is partial, its ranks hold shares of a pending "
            "sum; only values at rest (split or replicated) have a block to save or load");
  EXPECT_THAT(error_of([&] { plan_reshard({8, 4}, DType::kF32, rows, partial); }),
              HasSubstr("reshard target: layout (0, None) on (4,2) partial (1) is partial"));
  EXPECT_THAT(error_of([&] { shard_box(partial, {8, 4}, 0); }), HasSubstr("shard box: layout"));
}

TEST(ReshardErrors, ShapesTheLayoutsDoNotFitAreRefused) {
  const TensorLayout rows = strategy_to_layout({2, 1}, 2);
  EXPECT_EQ(error_of([&] { plan_reshard({8, 4}, DType::kF32, rows, strategy_to_layout({3, 1}, 3)); }),
            "reshard target: strategy (3,1) does not divide dim 0 of size 8");
  EXPECT_EQ(error_of([&] { plan_reshard({7, 4}, DType::kF32, rows, strategy_to_layout({1, 1}, 1)); }),
            "reshard source: strategy (2,1) does not divide dim 0 of size 7");
  EXPECT_EQ(error_of([&] { plan_reshard({8, 4, 2}, DType::kF32, rows, rows); }),
            "reshard source: strategy (2,1) has 2 dims but the tensor has 3 (shape (8, 4, 2))");
  EXPECT_EQ(error_of([&] { plan_reshard_target({8, 4}, DType::kF32, rows, rows, 2); }),
            "reshard target: rank 2 is outside the 2 ranks of layout strategy (2,1)");
}

TEST(ReshardErrors, SourcesThatAreNotTheLayoutsBlocksAreRefused) {
  const TensorLayout rows = strategy_to_layout({2, 1}, 2);
  const TensorLayout one = strategy_to_layout({1, 1}, 1);
  const std::vector<Tensor> blocks = split(distinct({8, 4}, DType::kF32, 7), rows);
  EXPECT_EQ(error_of([&] { reshard(blocks, {8, 6}, rows, one); }),
            "reshard: source rank 0 holds shape (4, 4) but its block of global shape (8, 6) under strategy (2,1) "
            "has shape (4, 6)");
  EXPECT_EQ(error_of([&] { reshard({blocks[0]}, {8, 4}, rows, one); }),
            "reshard: layout strategy (2,1) has 2 ranks but 1 source tensors were given (one per rank)");
  EXPECT_EQ(error_of([&] { reshard({blocks[0], Tensor({4, 4}, DType::kI32)}, {8, 4}, rows, one); }),
            "reshard: source rank 1 holds i32 but rank 0 holds f32");
  const TargetPlan t = plan_reshard_target({8, 4}, DType::kF32, rows, one, 0);
  std::vector<char> small(16);
  EXPECT_EQ(error_of([&] { copy_runs(t, [](int, int64_t, int64_t, void*) {}, small.data(), 16); }),
            "reshard: target rank 0 has a block of 128 bytes ([0:8, 0:4]) but was given 16 bytes to fill");
}

}  // namespace
}  // namespace sf
