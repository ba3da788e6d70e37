// The asynchronous save (train/checkpoint/async_save.h): on 3 virtual ranks it writes the
// checkpoint the synchronous save writes (files byte for byte, tensors loaded back bitwise); the
// caller may overwrite its tensors as soon as save() returns; a second save commits the first
// (save_owned: without a copy); an error (phase 1's, or one rank's background write) is thrown
// on every rank alike; and a CheckpointDir run saving asynchronously every 30 of 60 steps
// resumes from step 30 bitwise equal to the uninterrupted run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/train/checkpoint/async_save.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/save.h>
#include <shardflow/train/checkpoint/step_dir.h>
#include <shardflow/train/layers.h>
#include <shardflow/train/model.h>
#include <shardflow/train/training_checkpoint.h>
#include "tests/train/checkpoint_dir_util.h"
#include "tests/train/parallel_fixture.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using ckpttest::message_of;
using ckpttest::seeded;
using ::testing::StartsWith;

constexpr int kRanks = 3;

// Rank `rank`'s tensors: rows [2r, 2r+2) of "w" (6x5), and "b" (5,) whole; fresh copies, so a
// rank may overwrite them.
std::vector<ckpt::ShardedTensor> holdings(int rank) {
  const Tensor w = seeded({6, 5}, DType::kF32, 31);
  Tensor mine = Tensor::empty({2, 5});
  std::copy(w.f32() + rank * 10, w.f32() + rank * 10 + 10, mine.f32());
  return {ckpt::ShardedTensor::block("w", mine, {6, 5}, {2 * rank, 0}),
          ckpt::ShardedTensor::whole("b", seeded({5}, DType::kI32, 32))};
}

void expect_loads_back(const std::string& step_dir) {
  ckpt::CheckpointReader r(step_dir);
  EXPECT_TRUE(bitwise_equal(r.read_whole("w"), seeded({6, 5}, DType::kF32, 31)));
  EXPECT_TRUE(bitwise_equal(r.read_whole("b"), seeded({5}, DType::kI32, 32)));
}

TEST(CheckpointAsyncSave, WritesWhatTheSynchronousSaveWritesThoughTheCallerOverwritesItsTensors) {
  const std::string sync_dir = ckpttest::fresh_dir() + "/sync", async_dir = ckpttest::fresh_dir() + "/async";
  std::vector<int64_t> bytes(kRanks, -1);
  traintest::run_world(kRanks, traintest::Wire::kInproc, [&](int rank) {
    ckpt::save_checkpoint_dir(sync_dir, holdings(rank), {.step = 5, .rank_state = {{"rank", rank}}});
    ckpt::AsyncCheckpointWriter writer;
    std::vector<ckpt::ShardedTensor> mine = holdings(rank);
    writer.save(async_dir, mine, {.step = 5, .rank_state = {{"rank", rank}}});
    EXPECT_TRUE(writer.in_flight());
    // The training step goes on: the blocks change before the background write is done.
    for (ckpt::ShardedTensor& t : mine) std::fill_n(static_cast<char*>(t.local.raw()), t.local.nbytes(), 0x5a);
    EXPECT_FALSE(fs::exists(async_dir + "/step_5/manifest.json")) << "committed only at wait()";
    const std::optional<ckpt::SaveReport> report = writer.wait();
    ASSERT_TRUE(report.has_value());
    EXPECT_EQ(report->step_dir, async_dir + "/step_5");
    bytes[static_cast<size_t>(rank)] = report->bytes_written;
    EXPECT_FALSE(writer.in_flight());
    EXPECT_TRUE(writer.written());
    EXPECT_FALSE(writer.wait().has_value()) << "nothing in flight";
  });
  expect_loads_back(async_dir + "/step_5");
  expect_loads_back(sync_dir + "/step_5");
  for (int r = 0; r < kRanks; ++r) {
    const std::string name = "/step_5/rank_" + std::to_string(r) + ".data";
    EXPECT_EQ(ckpttest::read_bytes(async_dir + name), ckpttest::read_bytes(sync_dir + name)) << name;
    EXPECT_EQ(static_cast<int64_t>(ckpttest::read_bytes(async_dir + name).size()), bytes[static_cast<size_t>(r)]);
  }
  EXPECT_EQ(ckpttest::read_bytes(async_dir + "/step_5/manifest.json"),
            ckpttest::read_bytes(sync_dir + "/step_5/manifest.json"));
}

TEST(CheckpointAsyncSave, ASecondSaveCommitsTheFirstAndTheDestructorCommitsTheLast) {
  const std::string dir = ckpttest::fresh_dir();
  traintest::run_world(kRanks, traintest::Wire::kInproc, [&](int rank) {
    ckpt::AsyncCheckpointWriter writer;
    writer.save(dir, holdings(rank), {.step = 1});
    writer.save_owned(dir, holdings(rank), {.step = 2, .keep = 1});  // fresh tensors: written without a copy
    EXPECT_TRUE(fs::exists(dir + "/step_1/manifest.json")) << "the second save committed the first";
  });
  // The writers' destructors committed step 2, and its keep removed step 1 after that.
  EXPECT_EQ(ckpt::list_steps(dir).committed, std::vector<int64_t>{2});
  expect_loads_back(dir);
}

TEST(CheckpointAsyncSave, AnErrorIsThrownOnEveryRankAlikeAndTheWriterSavesAgainAfterIt) {
  const std::string root = ckpttest::fresh_dir();
  const std::string blocked = root + "/file";
  ckpttest::write_bytes(blocked, "a regular file where the checkpoint directory should be");
  std::vector<std::string> messages(kRanks);
  traintest::run_world(kRanks, traintest::Wire::kInproc, [&](int rank) {
    ckpt::AsyncCheckpointWriter writer;
    messages[static_cast<size_t>(rank)] =
        message_of<IoError>([&] { writer.save(blocked + "/ckpt", holdings(rank), {.step = 3}); });
    EXPECT_FALSE(writer.in_flight());
    writer.save(root + "/good", holdings(rank), {.step = 3});
    EXPECT_TRUE(writer.wait().has_value());
  });
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(messages[static_cast<size_t>(r)], messages[0]);
  EXPECT_THAT(messages[0], StartsWith("checkpoint '" + blocked + "/ckpt/step_3': save refused: rank 0: cannot create "
                                      "checkpoint directory '" + blocked + "/ckpt'"));
  expect_loads_back(root + "/good/step_3");
}

// The background write's failure (phase 2, on one rank) reaches every rank at finish_save,
// the collective AsyncCheckpointWriter::wait runs, and nothing is committed.
TEST(CheckpointAsyncSave, ABackgroundWriteFailureOnOneRankIsThrownOnEveryRank) {
  const std::string dir = ckpttest::fresh_dir();
  std::vector<std::string> messages(kRanks);
  traintest::run_world(kRanks, traintest::Wire::kInproc, [&](int rank) {
    ckpt::detail::PendingSave save = ckpt::detail::begin_save(dir, holdings(rank), {.step = 4});
    if (rank == 1) fs::create_directory(dir + "/step_4/rank_1.data");  // rank 1's file cannot be opened
    ckpt::detail::write_pending(save);
    messages[static_cast<size_t>(rank)] = message_of<IoError>([&] { ckpt::detail::finish_save(save); });
  });
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(messages[static_cast<size_t>(r)], messages[0]);
  EXPECT_THAT(messages[0], StartsWith("checkpoint '" + dir + "/step_4': save failed, not committed: rank 1: "));
  EXPECT_TRUE(ckpt::list_steps(dir).committed.empty());
  EXPECT_FALSE(fs::exists(dir + "/latest"));
}

// 60 steps (3 epochs of 20 batches of 8 rows) of a small classifier, saving every 30 steps
// asynchronously, or (a new program, another seed) resumed from `resume`.
struct Outcome {
  uint64_t print = 0;
  std::vector<float> losses;
  std::vector<int64_t> saved;
};

Outcome train(const std::string& save_dir, const std::string& resume = "") {
  set_seed(resume.empty() ? 4 : 77);
  auto net = std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(6, 8), std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(8, 3)});
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(),
              std::make_shared<nn::Adam>(net->trainable_params(), 0.01f));
  dataset::Dataset data = dataset::Dataset::generator(
      [](int64_t i) {
        Tensor x({6});
        for (int64_t k = 0; k < 6; ++k) x.f32()[k] = normal_at(21, 0, static_cast<uint64_t>(i * 6 + k));
        const auto label = static_cast<int32_t>(uniform_at(21, 1, static_cast<uint64_t>(i)) * 3);
        return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
      },
      160, {"data", "label"});
  data = data.shuffle(5).batch(8);
  auto log = std::make_shared<traintest::StepLog>(ParameterList{});
  std::vector<CallbackPtr> callbacks{log};
  std::shared_ptr<CheckpointDir> saver;
  if (!save_dir.empty()) callbacks.push_back(saver = std::make_shared<CheckpointDir>(save_dir, 30, 0, /*async=*/true));
  const ResumePoint from = resume.empty() ? ResumePoint{} : resume_from(model, data, resume);
  model.train(3, data, callbacks, from);
  return {traintest::fingerprint(net->get_parameters()), log->losses, saver ? saver->saved() : std::vector<int64_t>{}};
}

TEST(CheckpointAsyncSave, ACheckpointDirRunSavedAsynchronouslyResumesBitwiseEqual) {
  const std::string dir = ckpttest::fresh_dir();
  const Outcome full = train(dir);
  EXPECT_EQ(full.saved, (std::vector<int64_t>{30, 60})) << "train() returns with the last step committed";
  EXPECT_EQ(ckpt::list_steps(dir).committed, (std::vector<int64_t>{30, 60}));
  const Outcome rest = train("", dir + "/step_30");
  EXPECT_EQ(rest.print, full.print);
  EXPECT_EQ(rest.losses, std::vector<float>(full.losses.begin() + 30, full.losses.end()));
  set_seed(0);
}

}  // namespace
}  // namespace sf
