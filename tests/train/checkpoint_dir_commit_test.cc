// The commit protocol and refusals of distributed checkpoints (train/checkpoint/): a step
// without a committed manifest (a crash before the rename, a torn rank file) is never loaded
// and is named incomplete while the previous step still loads; keep K; every bad checkpoint
// refused with its exact one-line message naming the directory and file; a save killed
// (SIGKILL) at 20 random moments always leaves the last committed step loadable and intact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include <shardflow/train/checkpoint/optimizer_tensors.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/save.h>
#include <shardflow/train/checkpoint/step_dir.h>
#include "tests/train/checkpoint_dir_util.h"

namespace sf {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ckpttest::message_of;
using ckpttest::seeded;

// Saves "w" (4x6) and "b" (6,) whole from a thread with no rank (one rank).
void save_alone(const std::string& dir, int64_t step, uint64_t seed, int keep = 0) {
  ckpt::SaveOptions o;
  o.step = step;
  o.keep = keep;
  ckpt::save_checkpoint_dir(dir,
                            {ckpt::ShardedTensor::whole("w", seeded({4, 6}, DType::kF32, seed)),
                             ckpt::ShardedTensor::whole("b", seeded({6}, DType::kF32, seed + 1))},
                            o);
}

TEST(CheckpointDirCommit, AStepWithoutCommittedManifestIsNeverLoadedAndIsNamedIncomplete) {
  const std::string dir = ckpttest::fresh_dir();
  save_alone(dir, 1, 10);
  save_alone(dir, 2, 20);
  // A crash during step 3's save: its rank file torn, the manifest never renamed into place.
  fs::create_directories(dir + "/step_3");
  const std::string data = ckpttest::read_bytes(dir + "/step_2/rank_0.data");
  ckpttest::write_bytes(dir + "/step_3/rank_0.data", data.substr(0, data.size() / 2));
  ckpttest::write_bytes(dir + "/step_3/manifest.json.tmp", "{\"format\": \"shardflow-check");

  ckpt::CheckpointReader latest(dir);
  EXPECT_EQ(latest.step(), 2);
  EXPECT_TRUE(bitwise_equal(latest.read_whole("w"), seeded({4, 6}, DType::kF32, 20)));
  EXPECT_EQ(message_of<IoError>([&] { ckpt::CheckpointReader r(dir + "/step_3"); }),
            "checkpoint '" + dir + "/step_3' is incomplete: it has no manifest.json (a save that did not commit)");
  EXPECT_EQ(ckpt::list_steps(dir).incomplete, std::vector<int64_t>{3});

  // Saving step 3 again replaces the abandoned one, commits, and moves latest.
  save_alone(dir, 3, 30);
  ckpt::CheckpointReader now(dir);
  EXPECT_EQ(now.step(), 3);
  EXPECT_TRUE(bitwise_equal(now.read_whole("b"), seeded({6}, DType::kF32, 31)));
  EXPECT_FALSE(fs::exists(dir + "/step_3/manifest.json.tmp"));
}

TEST(CheckpointDirCommit, KeepRemovesOlderStepsOnlyAfterTheNewOneCommitted) {
  const std::string dir = ckpttest::fresh_dir();
  fs::create_directories(dir + "/step_0");  // abandoned, never committed
  for (int64_t s = 1; s <= 5; ++s) save_alone(dir, s, static_cast<uint64_t>(s), /*keep=*/2);
  const ckpt::StepListing steps = ckpt::list_steps(dir);
  EXPECT_EQ(steps.committed, (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(steps.incomplete.empty());
  EXPECT_EQ(ckpt::CheckpointReader(dir).step(), 5);
  EXPECT_TRUE(bitwise_equal(ckpt::CheckpointReader(dir + "/step_4").read_whole("w"), seeded({4, 6}, DType::kF32, 4)));
}

TEST(CheckpointDirCommit, BadCheckpointsAreRefusedNamingDirectoryAndFile) {
  const std::string dir = ckpttest::fresh_dir();
  const std::string step = dir + "/step_1";
  const std::string where = "checkpoint '" + step + "'";
  // Two ranks, each holding half of "w" by rows.
  const Tensor w = seeded({4, 6}, DType::kF32, 3);
  const TensorLayout rows(DeviceMatrix({2}), {{0}, {}});
  ckpttest::save_on_ranks(dir, 2, {{"w", w, rows}}, {.step = 1, .parallel_mode = "semi_auto_parallel"});
  const std::string manifest = ckpttest::read_bytes(step + "/manifest.json");
  const std::string rank1 = ckpttest::read_bytes(step + "/rank_1.data");
  auto open = [&] { ckpt::CheckpointReader r(dir); };

  fs::remove(step + "/rank_1.data");
  EXPECT_EQ(message_of<IoError>(open), where + ": rank_1.data is missing");
  ckpttest::write_bytes(step + "/rank_1.data", rank1.substr(0, 10));
  EXPECT_EQ(message_of<IoError>(open), where + ": rank_1.data is truncated: 10 bytes, the manifest lists 48");
  ckpttest::write_bytes(step + "/rank_1.data", rank1 + "x");
  EXPECT_EQ(message_of<IoError>(open), where + ": rank_1.data has 49 bytes, the manifest lists 48");
  std::string flipped = rank1;
  flipped[5] ^= 0x10;
  ckpttest::write_bytes(step + "/rank_1.data", flipped);
  EXPECT_THAT(message_of<IoError>([&] { ckpt::CheckpointReader(dir).read_whole("w"); }),
              StartsWith(where + ": rank_1.data: tensor 'w' block at byte 0 (48 bytes) fails its checksum (crc32 "));
  EXPECT_THAT(message_of<IoError>([&] { ckpt::CheckpointReader(dir).verify_all(); }), HasSubstr("fails its checksum"));
  // A read that covers rank 0's block only never touches the damaged one.
  EXPECT_TRUE(bitwise_equal(ckpt::CheckpointReader(dir).read("w", rows, 0), ckpttest::blocks_of(w, rows)[0]));
  ckpttest::write_bytes(step + "/rank_1.data", rank1);

  ckpttest::write_bytes(step + "/manifest.json", "{\"format\": \"shardflow-checkpoint\", \"version\": 2,");
  EXPECT_THAT(message_of<IoError>(open), StartsWith(where + ": manifest.json is malformed: [json.exception.parse_error"));
  std::string v3 = manifest;
  v3.replace(v3.find("\"version\": 2"), 12, "\"version\": 3");
  ckpttest::write_bytes(step + "/manifest.json", v3);
  EXPECT_EQ(message_of<IoError>(open), where + ": manifest.json is format version 3; this build reads version 2");
  std::string one_block = manifest;
  const size_t second = one_block.find(",{\"ranks\":[1]");
  one_block.erase(second, one_block.find('}', second) + 1 - second);
  ckpttest::write_bytes(step + "/manifest.json", one_block);
  EXPECT_EQ(message_of<IoError>(open), where + ": manifest.json is malformed: tensor 'w' has no block for layout rank 1");
  ckpttest::write_bytes(step + "/manifest.json", "[1, 2]");
  EXPECT_EQ(message_of<IoError>(open),
            where + ": manifest.json is malformed: it is not a shardflow checkpoint manifest (no \"format\": "
                    "\"shardflow-checkpoint\")");
  ckpttest::write_bytes(step + "/manifest.json", manifest);

  // Tensors that do not match what the caller holds, listed by name.
  ckpt::CheckpointReader reader(dir);
  EXPECT_NO_THROW(reader.check_tensors({{"w", {4, 6}, DType::kF32}}));
  EXPECT_EQ(message_of<InvalidArgument>([&] {
              reader.check_tensors({{"w", {6, 4}, DType::kF32}, {"fc.bias", {6}, DType::kF32},
                                    {"moments.fc.bias", {6}, DType::kF32}});
            }),
            where + " does not match the tensors wanted: missing 2 (fc.bias, moments.fc.bias); mis-shaped 1 (w (4, 6) "
                    "f32 saved, (6, 4) f32 wanted)");
  EXPECT_EQ(message_of<InvalidArgument>([&] { reader.check_tensors({}); }),
            where + " does not match the tensors wanted: unexpected 1 (w)");
  EXPECT_EQ(message_of<NotFound>([&] { reader.read_whole("v"); }), where + " has no tensor 'v' (it holds 1: w)");

  // A directory with no committed step, and a step saved twice.
  const std::string empty = dir + "/none";
  fs::create_directories(empty + "/step_3");
  EXPECT_EQ(message_of<IoError>([&] { ckpt::CheckpointReader r(empty); }),
            "'" + empty + "' holds no committed checkpoint (no 'latest'; committed: none; incomplete: step_3)");
  EXPECT_EQ(message_of<InvalidArgument>([&] { save_alone(dir, 1, 1); }),
            where + ": save refused: rank 0: '" + step + "' is already committed; a step is saved once");
}

TEST(CheckpointDirCommit, ASaveTheRanksDisagreeOnIsRefusedOnEveryRankBeforeWriting) {
  const std::string dir = ckpttest::fresh_dir();
  std::vector<std::string> messages(2);
  traintest::run_world(2, traintest::Wire::kInproc, [&](int rank) {
    messages[rank] = message_of<InvalidArgument>([&] {
      ckpt::save_checkpoint_dir(dir, {ckpt::ShardedTensor::whole("w", Tensor::zeros({4, rank == 0 ? 6 : 5}))},
                                {.step = 7});
    });
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_THAT(messages[0], StartsWith("checkpoint '" + dir + "/step_7': save refused: tensor 'w' differs between "
                                      "ranks: rank 0 holds (4, 6) f32"));
  EXPECT_FALSE(fs::exists(dir + "/step_7/rank_0.data"));
  EXPECT_FALSE(fs::exists(dir + "/latest"));

  // A layout rank no rank holds: rank 1 of a 4-device layout is nobody's.
  traintest::run_world(2, traintest::Wire::kInproc, [&](int rank) {
    const TensorLayout l(DeviceMatrix({4}), {{0}});
    messages[rank] = message_of<InvalidArgument>([&] {
      ckpt::save_checkpoint_dir(dir, {{"v", Tensor::zeros({2}), {8}, l, rank * 2}}, {.step = 8});
    });
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_THAT(messages[0], HasSubstr("save refused: tensor 'v': layout rank 1 of"));
  EXPECT_THAT(messages[0], HasSubstr("is held by no rank"));
}

TEST(CheckpointDirCommit, OptimizerStateRoundTripsAcrossRankCounts) {
  // Two ranks each holding a row block of a parameter (semi-auto parallel's Parameter::shard),
  // with Momentum state; loaded whole on one rank and on four.
  const std::string dir = ckpttest::fresh_dir();
  set_seed(3);
  // The momentum takes its block's shape at the first step (optimizer.cc): one step of zero
  // gradient, which leaves parameter and momentum as they were.
  auto first_step = [](nn::Optimizer& opt) {
    opt.step({Tensor::zeros(opt.parameters()[0].value().shape())});
    opt.set_global_step(0);
  };
  auto make = [](bool shard, int rank, int of) {
    Parameter p({8, 4}, "normal");
    p.finalize("fc.weight", 3);
    if (shard) p.shard({rank * 8 / of, 0}, {8 / of, 4});
    return p;
  };
  traintest::run_world(2, traintest::Wire::kInproc, [&](int rank) {
    nn::Momentum opt({make(true, rank, 2)}, 0.1f, 0.9f);
    first_step(opt);
    opt.state()[0].second.copy_from(seeded({4, 4}, DType::kF32, static_cast<uint64_t>(40 + rank)));
    opt.set_global_step(12);
    ckpt::save_checkpoint_dir(dir, ckpt::optimizer_tensors(opt), {.step = 12, .parallel_mode = "semi_auto_parallel"});
  });
  nn::Momentum whole({make(false, 0, 1)}, 0.1f, 0.9f);
  const Tensor initial = whole.parameters()[0].value().clone();
  Parameter(whole.parameters()[0]).value().zero();
  ckpt::CheckpointReader reader(dir);
  ckpt::load_optimizer_tensors(reader, whole);
  EXPECT_TRUE(bitwise_equal(whole.parameters()[0].value(), initial));
  EXPECT_EQ(whole.global_step(), 12);
  const Tensor m = whole.state()[0].second;
  EXPECT_TRUE(bitwise_equal(m.rows(0, 4), seeded({4, 4}, DType::kF32, 40)));
  EXPECT_TRUE(bitwise_equal(m.rows(4, 8), seeded({4, 4}, DType::kF32, 41)));
  for (int r = 0; r < 4; ++r) {
    nn::Momentum quarter({make(true, r, 4)}, 0.1f, 0.9f);
    first_step(quarter);
    ckpt::CheckpointReader rr(dir);
    ckpt::load_optimizer_tensors(rr, quarter);
    EXPECT_TRUE(bitwise_equal(quarter.parameters()[0].value(), initial.rows(r * 2, r * 2 + 2))) << r;
    EXPECT_TRUE(bitwise_equal(quarter.state()[0].second, m.rows(r * 2, r * 2 + 2))) << r;
  }
  // A network the checkpoint does not fit is refused before anything changes.
  Parameter other({8, 5}, "normal");
  other.finalize("fc.weight", 3);
  nn::Momentum wrong({other}, 0.1f, 0.9f);
  const Tensor before = wrong.parameters()[0].value().clone();
  EXPECT_THAT(message_of<InvalidArgument>([&] { ckpt::load_optimizer_tensors(reader, wrong); }),
              HasSubstr("does not match the tensors wanted: mis-shaped 2 (fc.weight (8, 4) f32 saved, (8, 5) f32 "
                        "wanted"));
  EXPECT_TRUE(bitwise_equal(wrong.parameters()[0].value(), before));
}

TEST(CheckpointDirCommit, ASaveKilledAtRandomMomentsLeavesTheLastCommittedStepLoadable) {
  const std::string dir = ckpttest::fresh_dir();
  save_alone(dir, 0, 0);
  std::mt19937 rng(2026);
  int64_t last = 0;
  for (int kill = 0; kill < 20; ++kill) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // Saves the steps after the newest committed one (a save killed after its commit but
      // before `latest` moved committed a step `latest` does not name) until killed; each
      // step's values derive from it. The child never returns into the test.
      try {
        for (int64_t s = ckpt::list_steps(dir).committed.back() + 1;; ++s)
          save_alone(dir, s, static_cast<uint64_t>(s) * 2, /*keep=*/3);
      } catch (...) {
        _exit(3);
      }
    }
    // The first child is let commit one step (so the test does not depend on the disk's
    // speed), then each is killed at a random moment of its saves.
    for (int waited = 0; kill == 0 && ckpt::list_steps(dir).committed.back() == 0 && waited < 1000; ++waited)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 100000)(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "kill " << kill;
    // `latest` names a committed step no older than before, and every committed step is whole.
    ckpt::CheckpointReader reader(dir);
    ASSERT_GE(reader.step(), last) << "kill " << kill;
    last = reader.step();
    for (int64_t s : ckpt::list_steps(dir).committed) {
      ckpt::CheckpointReader step(dir + "/" + ckpt::step_dir_name(s));
      ASSERT_NO_THROW(step.verify_all()) << "kill " << kill << " step " << s;
      ASSERT_TRUE(bitwise_equal(step.read_whole("w"), seeded({4, 6}, DType::kF32, static_cast<uint64_t>(s) * 2)));
    }
  }
  EXPECT_GT(last, 0) << "no save ever committed";
}

}  // namespace
}  // namespace sf
