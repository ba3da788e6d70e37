#include <shardflow/data/sharding.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include <shardflow/data/dataset.h>

namespace sf::dataset {
namespace {

using ::testing::HasSubstr;

TEST(Sharding, TenRowsThreeShardsAreInterleavedAndPaddedByWrapping) {
  EXPECT_EQ(shard_size(10, 3), 4);
  EXPECT_EQ(shard_indices(10, 3, 0), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(shard_indices(10, 3, 1), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(shard_indices(10, 3, 2), (std::vector<int64_t>{2, 5, 8, 1}));
  std::set<int64_t> all;
  for (int k = 0; k < 3; ++k)
    for (int64_t i : shard_indices(10, 3, k)) all.insert(i);
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), 9);
}

TEST(Sharding, DivisibleShardsAreDisjointAndCoverEveryRow) {
  std::vector<int> seen(12, 0);
  for (int k = 0; k < 4; ++k) {
    auto idx = shard_indices(12, 4, k);
    EXPECT_EQ(idx.size(), 3u);
    for (int64_t i : idx) ++seen[i];
  }
  EXPECT_EQ(seen, std::vector<int>(12, 1));
}

TEST(Sharding, MoreShardsThanRowsStillGivesEveryShardARow) {
  EXPECT_EQ(shard_indices(2, 3, 2), (std::vector<int64_t>{0}));
  EXPECT_TRUE(shard_indices(0, 3, 1).empty());
}

TEST(Sharding, BadArgumentsNameTheValues) {
  try {
    check_shard_args("MnistDataset", 3, 3);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("MnistDataset: shard_id must be in [0, 3) for num_shards = 3, got 3"));
  }
  EXPECT_THROW(check_shard_args("x", 0, 0), InvalidArgument);
  EXPECT_THROW(check_shard_args("x", 2, -1), InvalidArgument);
}

TEST(Sharding, GatherRowsCopiesWholeRowsInOrder) {
  Tensor t = Tensor::from_vector({3, 2}, std::vector<float>{0, 1, 2, 3, 4, 5});
  Tensor g = gather_rows(t, {2, 0, 2});
  EXPECT_EQ(g.shape(), (Shape{3, 2}));
  EXPECT_EQ(g.to_vector(), (std::vector<float>{4, 5, 0, 1, 4, 5}));
  EXPECT_THROW(gather_rows(t, {3}), ShapeError);
}

TEST(Sharding, FromColumnsShardsEveryColumnAlike) {
  std::vector<int32_t> ids(10);
  std::vector<float> sq(10);
  for (int i = 0; i < 10; ++i) ids[i] = i, sq[i] = static_cast<float>(i * i);
  for (int k = 0; k < 3; ++k) {
    Dataset ds =
        Dataset::from_columns({"id", "sq"}, {Tensor::from_vector({10}, ids), Tensor::from_vector({10}, sq)}, 3, k);
    ASSERT_EQ(ds.num_rows(), 4);
    auto expect = shard_indices(10, 3, k);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(ds.column("id").i32()[j], expect[j]);
      EXPECT_EQ(ds.column("sq").f32()[j], static_cast<float>(expect[j] * expect[j]));
    }
  }
}

TEST(Sharding, DatasetsRememberHowTheyWereShardedThroughMapShuffleAndBatch) {
  Dataset whole = Dataset::from_columns({"id"}, {Tensor::from_vector({10}, std::vector<int32_t>(10, 1))});
  EXPECT_EQ(whole.num_shards(), 1);
  EXPECT_EQ(whole.shard_id(), 0);
  Dataset part = Dataset::from_columns({"id"}, {Tensor::from_vector({10}, std::vector<int32_t>(10, 1))}, 4, 3)
                     .shuffle(1)
                     .batch(2);
  EXPECT_EQ(part.num_shards(), 4);
  EXPECT_EQ(part.shard_id(), 3);
  Dataset gen = Dataset::generator([](int64_t) { return std::vector<Tensor>{Tensor({2})}; }, 6, {"x"}, 3, 1);
  EXPECT_EQ(gen.num_shards(), 3);
  EXPECT_EQ(gen.shard_id(), 1);
}

}  // namespace
}  // namespace sf::dataset
