// CheckpointDir and resume_from (train/training_checkpoint.h): a run of 60 steps saving every
// 30, and a new program (another seed, a new network, Model and dataset) resumed from step 30
// for the 30 steps left, end bitwise equal — stand-alone and data parallel on 2 virtual ranks,
// BatchNorm's per-rank moving statistics included. A checkpoint of 2 data-parallel ranks
// resumed on 1 device with the same global batch continues within 1e-5 relative. Checkpoints
// without a training state and unmappable positions are refused (resume_modes_test.cc has the
// semi-auto, auto and pipeline modes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/train/checkpoint/optimizer_tensors.h>
#include <shardflow/train/checkpoint/save.h>
#include <shardflow/train/conv_layers.h>
#include <shardflow/train/layers.h>
#include <shardflow/train/model.h>
#include <shardflow/train/training_checkpoint.h>
#include "tests/train/checkpoint_dir_util.h"
#include "tests/train/parallel_fixture.h"

namespace sf::traintest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace training_checkpoint_test {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr int64_t kFeatures = 6, kSteps = 20, kEpochs = 3;  // 60 steps: 3 epochs of 20 batches

std::shared_ptr<nn::SequentialCell> net_of(bool batch_norm) {
  std::vector<nn::CellPtr> cells{std::make_shared<nn::Dense>(kFeatures, 8)};
  if (batch_norm) cells.push_back(std::make_shared<nn::BatchNorm2d>(8));
  cells.push_back(std::make_shared<nn::ReLU>());
  cells.push_back(std::make_shared<nn::Dense>(8, 3));
  return std::make_shared<nn::SequentialCell>(cells);
}

// kSteps batches of `batch` rows per shard and epoch; shuffled anew each epoch unless seed is 0.
dataset::Dataset rows(int shards, int shard, int64_t batch = 8, uint64_t shuffle_seed = 5) {
  dataset::Dataset d = dataset::Dataset::generator(
      [](int64_t i) {
        Tensor x({kFeatures});
        for (int64_t k = 0; k < kFeatures; ++k) x.f32()[k] = normal_at(21, 0, static_cast<uint64_t>(i * kFeatures + k));
        const auto label = static_cast<int32_t>(uniform_at(21, 1, static_cast<uint64_t>(i)) * 3);
        return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
      },
      kSteps * batch * shards, {"data", "label"}, shards, shard);
  if (shuffle_seed) d = d.shuffle(shuffle_seed);
  return d.batch(batch);
}

struct Run {
  bool batch_norm = true;
  int shards = 1, shard = 0;
  int64_t batch = 8;
  uint64_t shuffle_seed = 5;
};

struct Outcome {
  uint64_t print = 0;
  std::vector<float> losses;
  std::vector<Tensor> values;
  std::vector<int64_t> saved;
};

// Trains kEpochs epochs: from the start (seed 4) saving to `save_dir` every 30 steps, or (a
// new program, seed 77) resumed from `resume`.
Outcome train(const Run& r, const std::string& save_dir, const std::string& resume = "") {
  set_seed(resume.empty() ? 4 : 77);
  auto net = net_of(r.batch_norm);
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::Adam>(net->trainable_params(), 0.01f));
  const dataset::Dataset data = rows(r.shards, r.shard, r.batch, r.shuffle_seed);
  auto log = std::make_shared<StepLog>(ParameterList{});
  std::vector<CallbackPtr> callbacks{log};
  std::shared_ptr<CheckpointDir> saver;
  if (!save_dir.empty()) callbacks.push_back(saver = std::make_shared<CheckpointDir>(save_dir, 30, 0));
  const ResumePoint from = resume.empty() ? ResumePoint{} : resume_from(model, data, resume);
  model.train(kEpochs, data, callbacks, from);
  return {fingerprint(net->get_parameters()), log->losses, clone_values(net->get_parameters()),
          saver ? saver->saved() : std::vector<int64_t>{}};
}

std::vector<float> tail(const std::vector<float>& v, size_t from) {
  return from <= v.size() ? std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(from), v.end())
                          : std::vector<float>{};
}

TEST(TrainingCheckpoint, StandAloneResumeFromStep30IsBitwiseEqual) {
  const std::string dir = ckpttest::fresh_dir();
  const Outcome full = train({}, dir);
  EXPECT_EQ(full.saved, (std::vector<int64_t>{30, 60}));
  const Outcome rest = train({}, "", dir + "/step_30");
  EXPECT_EQ(rest.print, full.print) << "every parameter, moving statistics included";
  EXPECT_EQ(rest.losses, tail(full.losses, 30));
  // DIR alone is its latest step: the end of the run, nothing left to train.
  set_seed(77);
  auto net = net_of(true);
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::Adam>(net->trainable_params(), 0.01f));
  EXPECT_EQ(resume_from(model, rows(1, 0), dir), (ResumePoint{kEpochs, 0}));
  EXPECT_EQ(fingerprint(net->get_parameters()), full.print);
  EXPECT_EQ(model.optimizer().global_step(), 60);
  set_seed(0);
}

TEST(TrainingCheckpoint, DataParallelResumeFromStep30IsBitwiseEqual) {
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
  const std::string dir = ckpttest::fresh_dir();
  std::vector<Outcome> full(2), rest(2);
  run_world(2, Wire::kInproc, [&](int rank) { full[rank] = train({.shards = 2, .shard = rank}, dir); });
  run_world(2, Wire::kInproc,
            [&](int rank) { rest[rank] = train({.shards = 2, .shard = rank}, "", dir + "/step_30"); });
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(full[rank].saved, (std::vector<int64_t>{30, 60}));
    EXPECT_EQ(rest[rank].print, full[rank].print);
    EXPECT_EQ(rest[rank].losses, tail(full[rank].losses, 30));
  }
  // Each rank's moving statistics are its own: the ranks' parameters differ, and each resumed
  // rank took its own back.
  EXPECT_NE(full[0].print, full[1].print);
  set_seed(0);
}

// 2 data-parallel ranks of 8 rows per batch, resumed on 1 device with batches of 16: the same
// global batches, so the step count is the position; the sums differ in rounding only.
TEST(TrainingCheckpoint, TwoRanksResumedOnOneDeviceContinueWithin1e5) {
  const std::string dir = ckpttest::fresh_dir();
  std::vector<Outcome> full(2);
  {
    ParallelContextGuard guard({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
    run_world(2, Wire::kInproc, [&](int rank) {
      full[rank] = train({.batch_norm = false, .shards = 2, .shard = rank, .shuffle_seed = 0}, dir);
    });
  }
  const Outcome one = train({.batch_norm = false, .batch = 16, .shuffle_seed = 0}, "", dir + "/step_30");
  ASSERT_EQ(one.values.size(), full[0].values.size());
  for (size_t i = 0; i < one.values.size(); ++i) {
    const std::vector<float> a = one.values[i].to_vector(), b = full[0].values[i].to_vector();
    float scale = 0, diff = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      scale = std::max(scale, std::abs(b[k]));
      diff = std::max(diff, std::abs(a[k] - b[k]));
    }
    EXPECT_LE(diff, 1e-5f * scale) << "parameter " << i;
  }
  EXPECT_EQ(one.losses.size(), 30u);
  // A shuffled dataset's position does not map to another rank count (each shard shuffles its
  // own rows); another global batch maps by rows (tests/train/state_mapping_test.cc).
  const std::string shuffled = dir + "_shuffled";
  std::filesystem::remove_all(shuffled);
  std::filesystem::create_directories(shuffled);
  {
    ParallelContextGuard guard({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
    run_world(2, Wire::kInproc,
              [&](int rank) { train({.batch_norm = false, .shards = 2, .shard = rank}, shuffled); });
  }
  EXPECT_THAT([&] { train({.batch_norm = false, .batch = 16}, "", shuffled + "/step_30"); },
              ThrowsMessage<InvalidArgument>(HasSubstr("a shuffled dataset's position does not map")));
  std::filesystem::remove_all(shuffled);
  set_seed(0);
}

TEST(TrainingCheckpoint, CheckpointsWithoutATrainingStateAreRefused) {
  const std::string dir = ckpttest::fresh_dir();
  {
    // A checkpoint of the optimizer's tensors only: no training state to resume.
    set_seed(4);
    auto net = net_of(false);
    nn::Adam adam(net->trainable_params(), 0.01f);
    ckpt::save_checkpoint_dir(dir, ckpt::optimizer_tensors(adam), {.step = 3});
    Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::Adam>(net->trainable_params(), 0.01f));
    EXPECT_THAT([&] { resume_from(model, rows(1, 0), dir); },
                ThrowsMessage<InvalidArgument>(HasSubstr("step_3' holds no training state")));
  }
  EXPECT_THAT([] { CheckpointDir("run", -1); }, ThrowsMessage<InvalidArgument>(HasSubstr("save_every must be >= 0")));
  set_seed(0);
}

}  // namespace training_checkpoint_test
}  // namespace
}  // namespace sf::traintest
