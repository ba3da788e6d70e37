// map_state_scalars (train/state_mapping.h): a training state's dataset position made fit for
// another rank count or global batch — the rule resume_from and train_elastic share. The same
// global batch keeps the step; another maps by rows to the first global batch that reads no row
// already read, rolling over to the next epoch past the last; a shuffled set maps only to the
// same shards; the dataset fields and the rank become this configuration's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/data/dataset.h>
#include <shardflow/train/state_mapping.h>

namespace sf {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace state_mapping_test {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// `rows` rows of one feature, sharded `shards` ways, batches of `batch`, shuffled when `seed` >= 0.
dataset::Dataset rows(int64_t n, int shards, int shard, int64_t batch, int seed = -1) {
  std::vector<float> x(static_cast<size_t>(n));
  std::vector<int32_t> y(static_cast<size_t>(n));
  dataset::Dataset d = dataset::Dataset::from_columns(
      {"x", "y"}, {Tensor::from_vector({n, 1}, x), Tensor::from_vector({n}, y)}, shards, shard);
  if (seed >= 0) d = d.shuffle(static_cast<uint64_t>(seed));
  return d.batch(batch);
}

// The scalars a state captured on `data` at (epoch, step) holds, as training_state.cc writes them.
nlohmann::json saved(const dataset::Dataset& data, int64_t epoch, int64_t step, int ranks) {
  return {{"epoch", epoch},
          {"step_in_epoch", step},
          {"rank", 0},
          {"ranks", ranks},
          {"dataset",
           {{"shuffle_seed", nullptr},
            {"batch_size", data.batch_size()},
            {"batches_per_epoch", data.get_dataset_size()},
            {"num_rows", data.num_rows()},
            {"num_shards", data.num_shards()},
            {"shard_id", data.shard_id()}}}};
}

TEST(StateMapping, TheSameGlobalBatchKeepsTheStep) {
  // 4 ranks x 8 rows and 2 ranks x 16 rows: 32 rows a step either way.
  const nlohmann::json s = map_state_scalars(saved(rows(640, 4, 1, 8), 0, 7, 4), rows(640, 2, 1, 16), 1, 2, 4, "t");
  EXPECT_EQ(s["epoch"], 0);
  EXPECT_EQ(s["step_in_epoch"], 7);
  EXPECT_EQ(s["dataset"]["num_shards"], 2);
  EXPECT_EQ(s["dataset"]["shard_id"], 1);
  EXPECT_EQ(s["dataset"]["batch_size"], 16);
  EXPECT_EQ(s["rank"], 1);
  EXPECT_EQ(s["ranks"], 2);
}

TEST(StateMapping, AnotherGlobalBatchMapsByRows) {
  // 4 ranks x 8 (32 rows a step) to 3 ranks x 8 (24): 10 steps read 320 rows; step ceil(320 /
  // 24) = 14 is the first that reads none of them (it starts at row 336: 16 rows skipped).
  const dataset::Dataset three = rows(960, 3, 2, 8);
  nlohmann::json s = map_state_scalars(saved(rows(960, 4, 0, 8), 1, 10, 4), three, 2, 3, 4, "t");
  EXPECT_EQ(s["epoch"], 1);
  EXPECT_EQ(s["step_in_epoch"], 14);
  EXPECT_EQ(s["dataset"]["batches_per_epoch"], three.get_dataset_size());
  // A multiple maps exactly: 12 steps of 32 rows are 16 steps of 24.
  s = map_state_scalars(saved(rows(960, 4, 0, 8), 0, 12, 4), three, 2, 3, 4, "t");
  EXPECT_EQ(s["step_in_epoch"], 16);
  // Growing: 3 x 8 to 4 x 8, 5 steps of 24 rows = 120, step ceil(120 / 32) = 4.
  s = map_state_scalars(saved(three, 0, 5, 3), rows(960, 4, 3, 8), 3, 4, 3, "t");
  EXPECT_EQ(s["step_in_epoch"], 4);
}

TEST(StateMapping, PastTheLastBatchIsTheNextEpoch) {
  // 2 x 8 to 1 x 8 on 64 rows: step 3 of 4 read 48 rows; 1 rank has 8 batches of 8, step 6
  // is inside. From step 4 (the end) of another set: 64 rows, step 8 is past the 8 batches.
  const dataset::Dataset one = rows(64, 1, 0, 8);
  EXPECT_EQ(map_state_scalars(saved(rows(64, 2, 0, 8), 0, 3, 2), one, 0, 1, 2, "t")["step_in_epoch"], 6);
  nlohmann::json full = saved(rows(64, 2, 0, 8), 2, 4, 2);
  const nlohmann::json s = map_state_scalars(full, one, 0, 1, 2, "t");
  EXPECT_EQ(s["epoch"], 3);
  EXPECT_EQ(s["step_in_epoch"], 0);
}

TEST(StateMapping, RefusesWhatDoesNotMap) {
  // The same global batch with other batches per epoch: another dataset.
  EXPECT_THAT([] { map_state_scalars(saved(rows(640, 2, 0, 8), 0, 1, 2), rows(320, 1, 0, 16), 0, 1, 2, "ckpt"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("ckpt: saved with 40 batches per epoch, resumed with 20")));
  // A shuffled set on another shard count.
  nlohmann::json shuffled = saved(rows(640, 2, 0, 8), 0, 1, 2);
  shuffled["dataset"]["shuffle_seed"] = 3;
  EXPECT_THAT([&] { map_state_scalars(shuffled, rows(640, 1, 0, 16, 3), 0, 1, 2, "ckpt"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("a shuffled dataset's position does not map")));
  // No dataset scalars at all.
  EXPECT_THAT([] { map_state_scalars(nlohmann::json::object(), rows(64, 1, 0, 8), 0, 1, 2, "ckpt"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("ckpt: scalar 'dataset' is missing")));
}

}  // namespace state_mapping_test
}  // namespace
}  // namespace sf
