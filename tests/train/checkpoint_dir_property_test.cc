// The resharding property through real checkpoint directories: for 216 seeded random cases
// (M and N in 1..8, coprime pairs and N = 1 among them; random device matrices with axes of
// size 1, random tensor maps with replicated axes; shapes of 0 to 3 dims whose dims are 0, one
// element per block, or a few), a tensor saved by save_checkpoint_dir on M virtual ranks under
// one layout and loaded by CheckpointReader for each of N ranks under another is, on every
// rank, bitwise the block sliced from the full tensor, and each rank reads at most 1.1x its
// shard bytes. Blocks are always even: shard_box refuses a split that does not divide a dim,
// so the uneven shapes here are those with empty (zero-size) and one-element blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <shardflow/parallel/shard_box.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/save.h>
#include "tests/parallel/random_layouts.h"
#include "tests/train/checkpoint_dir_util.h"

namespace sf {
namespace {

using layouttest::random_layout;
using layouttest::random_mesh;

// Rank `rank`'s block of `global` under `layout`, copied element by element from its box: the
// oracle, independent of the reshard planner the saver and reader use.
Tensor slice_of(const Tensor& global, const TensorLayout& layout, int rank) {
  const ShardBox box = shard_box(layout, global.shape(), rank);
  Tensor out = Tensor::empty(box.shape(), global.dtype());
  const size_t elem = dtype_size(global.dtype());
  const Shape& g = global.shape();
  const auto* src = static_cast<const char*>(global.raw());
  auto* dst = static_cast<char*>(out.raw());
  std::vector<int64_t> at(box.dims.size(), 0);  // index within the box, row-major
  for (int64_t i = 0; i < out.numel(); ++i) {
    int64_t flat = 0;
    for (size_t d = 0; d < at.size(); ++d) flat = flat * g[d] + box.dims[d].offset + at[d];
    std::memcpy(dst + i * static_cast<int64_t>(elem), src + flat * static_cast<int64_t>(elem), elem);
    for (size_t d = at.size(); d-- > 0;) {
      if (++at[d] < box.dims[d].extent) break;
      at[d] = 0;
    }
  }
  return out;
}

struct Case {
  int m;  // saving ranks
  int n;  // loading ranks
};

TEST(CheckpointDirProperty, SavedOnMRanksLoadsOnNRanksBitwiseAsSlicesOfTheWholeTensor) {
  std::mt19937 rng(20261126);
  // Pairs without a common factor and N = 1 first, then random pairs from 1..8.
  std::vector<Case> cases{{3, 8}, {8, 3}, {5, 8}, {7, 4}, {2, 7}, {7, 6}, {5, 3}, {8, 5}, {3, 2}, {7, 8},
                          {8, 1}, {5, 1}, {1, 1}, {1, 8}, {6, 1}, {4, 1}};
  while (cases.size() < 216) {
    const int m = static_cast<int>(rng() % 8 + 1);
    cases.push_back({m, static_cast<int>(rng() % 8 + 1)});
  }
  const std::string root = ckpttest::fresh_dir();
  int coprime = 0, to_one = 0, empty_blocks = 0, replicated = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case c = cases[i];
    const int dims = static_cast<int>(rng() % 4);  // 0 (a scalar) to 3
    const TensorLayout from = random_layout(DeviceMatrix(random_mesh(c.m, rng)), dims, rng);
    const TensorLayout to = random_layout(DeviceMatrix(random_mesh(c.n, rng)), dims, rng);
    Shape shape;
    for (int d = 0; d < dims; ++d) {
      // 0 (every block empty), one element per block of the finer split, or a few.
      const uint32_t pick = rng() % 10;
      const int64_t multiple = pick == 0 ? 0 : pick < 4 ? 1 : static_cast<int64_t>(rng() % 3 + 1);
      shape.push_back(std::lcm(from.splits(d), to.splits(d)) * multiple);
    }
    const DType dtype = rng() % 2 == 0 ? DType::kF32 : DType::kI32;
    const Tensor whole = ckpttest::seeded(shape, dtype, 1000 + i);
    const std::string label = "case " + std::to_string(i) + ": " + std::to_string(c.m) + " ranks " + from.str() +
                              " -> " + std::to_string(c.n) + " ranks " + to.str() + " of " + whole.describe();
    SCOPED_TRACE(label);
    coprime += std::gcd(c.m, c.n) == 1 && c.m > 1 && c.n > 1;
    to_one += c.n == 1 && c.m > 1;
    empty_blocks += whole.numel() == 0;
    replicated += !from.replicated_axes().empty() || !to.replicated_axes().empty();

    // Saved through the collective two-phase save, each rank passing its own slice.
    const std::string dir = root + "/" + std::to_string(i);
    ASSERT_NO_THROW(traintest::run_world(c.m, traintest::Wire::kInproc, [&](int rank) {
      ckpt::save_checkpoint_dir(dir, {{"t", slice_of(whole, from, rank), shape, from, rank}}, {.step = 1});
    }));

    for (int r = 0; r < c.n; ++r) {
      ckpt::CheckpointReader reader(dir);  // one per loading rank: its own byte count
      const Tensor got = reader.read("t", to, r);
      const Tensor want = slice_of(whole, to, r);
      ASSERT_TRUE(bitwise_equal(got, want)) << "rank " << r << ": " << got.describe() << " vs " << want.describe();
      const auto shard_bytes = static_cast<int64_t>(want.nbytes());
      EXPECT_LE(reader.bytes_read() * 10, shard_bytes * 11)
          << "rank " << r << " read " << reader.bytes_read() << " bytes for a shard of " << shard_bytes;
    }
    std::filesystem::remove_all(dir);
  }
  // The cases cover what they claim to.
  EXPECT_GE(coprime, 30);
  EXPECT_GE(to_one, 10);
  EXPECT_GE(empty_blocks, 5);
  EXPECT_GE(replicated, 100);
}

}  // namespace
}  // namespace sf
