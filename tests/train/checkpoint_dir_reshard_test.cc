// Distributed checkpoints saved on M virtual ranks under one layout and loaded on N ranks
// under another (train/checkpoint/): every loaded block is bitwise the block of the saved
// global values (the in-memory reshard of them is the oracle), for 8->1, 8->3, 4->6, 3->4,
// 1->8 and data parallel's replicated tensors -> seed 001's layouts, with scalars, i32 and
// empty tensors; each rank reads at most 1.1x its shard bytes; the opaque states come back.
#include <gtest/gtest.h>

#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/save.h>
#include "tests/train/checkpoint_dir_util.h"

namespace sf {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace checkpoint_dir_reshard_test {

using ckpttest::Saved;
using ckpttest::blocks_of;
using ckpttest::seeded;
using ckpttest::whole_layout;

// Seed 001's layout: device matrix (2,2,2) ("dp","sp","mp"), layout("mp", ("sp","dp")).
TensorLayout seed001() { return TensorLayout(DeviceMatrix({2, 2, 2}), {{2}, {1, 0}}, {}, {"dp", "sp", "mp"}); }

struct Case {
  const char* label;
  int saved_ranks;
  TensorLayout from;
  int loaded_ranks;
  TensorLayout to;
};

std::vector<Case> cases() {
  return {
      {"8->1 seed 001 to whole", 8, seed001(), 1, whole_layout({12, 12})},
      {"8->3 seed 001 to column blocks", 8, seed001(), 3, TensorLayout(DeviceMatrix({3}), {{}, {0}})},
      {"4->6 (2,2) to (2,3) transposed", 4, TensorLayout(DeviceMatrix({2, 2}), {{0}, {1}}), 6,
       TensorLayout(DeviceMatrix({2, 3}), {{1}, {0}})},
      {"3->4 columns to rows", 3, TensorLayout(DeviceMatrix({3}), {{}, {0}}), 4,
       TensorLayout(DeviceMatrix({4}), {{0}, {}})},
      {"1->8 whole to seed 001", 1, whole_layout({12, 12}), 8, seed001()},
      {"data parallel 4 replicated -> seed 001", 4, TensorLayout::replicated(DeviceMatrix({4}), 2), 8, seed001()},
      {"seed 001 -> 8 replicated", 8, seed001(), 8, TensorLayout::replicated(DeviceMatrix({8}), 2)},
  };
}

TEST(CheckpointDirReshard, SavedOnMRanksLoadsBitwiseOnNRanksUnderAnotherLayout) {
  const std::string base = ckpttest::fresh_dir();
  int index = 0;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    const std::string dir = base + "/" + std::to_string(index++);
    const Shape shape{12, 12};
    const std::vector<Saved> saved = {
        {"w", seeded(shape, DType::kF32, 1), c.from},
        {"counts", seeded(shape, DType::kI32, 2), c.from},
        {"empty", Tensor::empty({0, 12}, DType::kF32), c.from},
        {"global_step", Tensor::from_vector({}, std::vector<int32_t>{30}),
         TensorLayout::replicated(DeviceMatrix({c.saved_ranks}), 0)},
    };
    ckpt::SaveOptions options;
    options.step = 30;
    options.parallel_mode = "semi_auto_parallel";
    options.state = {{"epoch", 2}, {"rng", {1, 2, 3}}};
    ASSERT_NO_THROW(ckpttest::save_on_ranks(dir, c.saved_ranks, saved, options));

    for (int t = 0; t < c.loaded_ranks; ++t) {
      SCOPED_TRACE("target rank " + std::to_string(t));
      ckpt::CheckpointReader reader(dir);
      EXPECT_EQ(reader.step(), 30);
      EXPECT_EQ(reader.manifest().world_size, c.saved_ranks);
      EXPECT_EQ(reader.manifest().parallel_mode, "semi_auto_parallel");
      EXPECT_EQ(reader.state(), options.state);
      EXPECT_EQ(reader.rank_state(c.saved_ranks - 1), (nlohmann::json{{"rank", c.saved_ranks - 1}}));
      int64_t shard_bytes = 0;
      for (const Saved& s : saved) {
        const TensorLayout to = s.global.rank() == 0 ? TensorLayout::replicated(c.to.mesh(), 0) : c.to;
        const Tensor got = reader.read(s.name, to, t);
        const Tensor want = blocks_of(s.global, to)[static_cast<size_t>(t)];
        EXPECT_TRUE(bitwise_equal(got, want)) << s.name << ": " << got.describe() << " vs " << want.describe();
        shard_bytes += static_cast<int64_t>(want.nbytes());
      }
      EXPECT_LE(reader.bytes_read() * 10, shard_bytes * 11) << "bytes read " << reader.bytes_read();
    }
    ckpt::CheckpointReader whole(dir);
    for (const Saved& s : saved) EXPECT_TRUE(bitwise_equal(whole.read_whole(s.name), s.global)) << s.name;
    EXPECT_NO_THROW(whole.verify_all());
  }
}

TEST(CheckpointDirReshard, ReplicatedBlocksAreWrittenOnceAndPartialReadsCanVerifyEveryBlock) {
  const std::string dir = ckpttest::fresh_dir();
  const Tensor w = seeded({8, 8}, DType::kF32, 7);
  // 8 ranks, rows split over axis 1 of (2,4): each block held by 2 ranks, written by the lower.
  const TensorLayout from(DeviceMatrix({2, 4}), {{1}, {}});
  ckpttest::save_on_ranks(dir, 8, {{"w", w, from}}, {.step = 1});
  ckpt::CheckpointReader reader(dir);
  const ckpt::TensorEntry& t = *reader.manifest().find("w");
  ASSERT_EQ(t.blocks.size(), 4u);
  EXPECT_EQ(t.blocks[1].ranks, (std::vector<int>{1, 5}));
  EXPECT_EQ(t.blocks[1].file, "rank_1.data");
  EXPECT_EQ(reader.manifest().ranks[5].bytes, 0);

  // Columns split 2 ways: every piece is part of a source block.
  const TensorLayout to(DeviceMatrix({2}), {{}, {0}});
  const Tensor half = reader.read("w", to, 1);
  EXPECT_TRUE(bitwise_equal(half, blocks_of(w, to)[1]));
  EXPECT_EQ(reader.bytes_read(), static_cast<int64_t>(half.nbytes()));
  ckpt::CheckpointReader checked(dir, ckpt::Verify::kEveryBlockTouched);
  EXPECT_TRUE(bitwise_equal(checked.read("w", to, 1), half));
  EXPECT_EQ(checked.bytes_read(), static_cast<int64_t>(w.nbytes()));  // all four blocks, whole
}

TEST(CheckpointDirReshard, TensorsHeldBySomeRanksOnly) {
  // A pipeline's stages: rank 0 holds "a", rank 1 holds "b", both whole.
  const std::string dir = ckpttest::fresh_dir();
  const Tensor a = seeded({3, 5}, DType::kF32, 1), b = seeded({7}, DType::kI32, 2);
  traintest::run_world(2, traintest::Wire::kInproc, [&](int rank) {
    ckpt::save_checkpoint_dir(dir, {rank == 0 ? ckpt::ShardedTensor::whole("a", a) : ckpt::ShardedTensor::whole("b", b)},
                              {.step = 4, .parallel_mode = "pipeline_parallel"});
  });
  ckpt::CheckpointReader reader(dir + "/step_4");
  EXPECT_EQ(reader.manifest().find("b")->blocks[0].file, "rank_1.data");
  EXPECT_TRUE(bitwise_equal(reader.read_whole("a"), a));
  EXPECT_TRUE(bitwise_equal(reader.read_whole("b"), b));
}

}  // namespace checkpoint_dir_reshard_test
}  // namespace
}  // namespace sf
