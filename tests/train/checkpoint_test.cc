// Tests for checkpoints (train/checkpoint.h) and the ModelCheckpoint callback: a Momentum run
// saved and loaded back is bitwise identical, a fresh network restored from it continues
// with the very same next step, the callback's file names, and IoError naming the path for a
// missing, truncated or foreign file.
#include <shardflow/train/checkpoint.h>

#include <gtest/gtest.h>

#include <msgpack.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/core/serialize.h>
#include <shardflow/train/callback.h>
#include "toy_data.h"
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>

namespace sf {
namespace {

namespace fs = std::filesystem;

using traintest::kClasses;
using traintest::kIn;
using traintest::random_rows;
constexpr float kLr = 0.05f, kMomentum = 0.9f;


struct LossRecorder : Callback {
  std::vector<float> losses;
  void on_step_end(const RunContext& ctx) override { losses.push_back(ctx.loss); }
};

// A fresh directory under the test temp dir, named for the running test.
std::string fresh_dir(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(::testing::TempDir()) / (std::string("sf_ckpt_") + info->name() + "_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// load_checkpoint(path) must throw IoError whose message names `path`.
::testing::AssertionResult refused_naming_path(const std::string& path) {
  try {
    load_checkpoint(path);
    return ::testing::AssertionFailure() << "loaded '" << path << "'";
  } catch (const IoError& e) {
    if (std::string(e.what()).find(path) == std::string::npos)
      return ::testing::AssertionFailure() << "message does not name the path: " << e.what();
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "non-IoError: " << e.what();
  }
}

// A small net and its Momentum model, trained for `steps` steps of 8 rows.
struct Trained {
  explicit Trained(uint64_t seed) {
    set_seed(seed);
    net = std::make_unique<nn::Mlp>(kIn, std::vector<int64_t>{8}, kClasses);
    model = std::make_unique<Model>(*net, nn::CrossEntropyLoss(), nn::Momentum(net->trainable_params(), kLr, kMomentum));
    set_seed(0);
  }
  std::unique_ptr<nn::Mlp> net;
  std::unique_ptr<Model> model;
};

TEST(Checkpoint, SaveLoadIsBitwiseAndResumesTheExactNextStep) {
  const std::string dir = fresh_dir("resume");
  const std::string path = dir + "/run.ckpt";
  Trained original(5);
  original.model->train(1, random_rows(40, 1).batch(8));  // 5 steps: moments are non-zero
  nn::Optimizer& opt = original.model->optimizer();
  ASSERT_EQ(opt.global_step(), 5);
  save_checkpoint(checkpoint_entries(opt), path);

  const NamedTensors saved = checkpoint_entries(opt);
  const NamedTensors loaded = load_checkpoint(path);
  ASSERT_EQ(loaded.size(), 4u + 4u + 1u);  // parameters, moments, global_step
  ASSERT_EQ(loaded.size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(loaded[i].first, saved[i].first);
    EXPECT_TRUE(bitwise_equal(loaded[i].second, saved[i].second)) << saved[i].first;
  }
  EXPECT_EQ(loaded[4].first, "moments.fc1_weight");
  EXPECT_EQ(loaded.back().first, "global_step");
  EXPECT_EQ(loaded.back().second.i32()[0], 5);

  // A fresh network from another seed, restored from the file.
  Trained restored(99);
  nn::Optimizer& opt2 = restored.model->optimizer();
  ASSERT_FALSE(bitwise_equal(opt2.parameters()[0].value(), opt.parameters()[0].value()));
  load_into(opt2, loaded);
  EXPECT_EQ(opt2.global_step(), 5);
  for (size_t i = 0; i < opt.parameters().size(); ++i)
    EXPECT_TRUE(bitwise_equal(opt2.parameters()[i].value(), opt.parameters()[i].value())) << i;
  const auto state = opt.state(), state2 = opt2.state();
  for (size_t i = 0; i < state.size(); ++i) EXPECT_TRUE(bitwise_equal(state2[i].second, state[i].second)) << i;

  // A third net with the checkpoint's parameters but no optimizer state: its step differs,
  // which shows the momentum state matters for what follows.
  Trained stateless(99);
  for (size_t i = 0; i < opt.parameters().size(); ++i) {
    Parameter p = stateless.model->optimizer().parameters()[i];  // a handle on the same tensor
    p.value().copy_from(opt.parameters()[i].value());
  }

  const dataset::Dataset next = random_rows(16, 2).batch(8);  // two more steps
  auto rec1 = std::make_shared<LossRecorder>(), rec2 = std::make_shared<LossRecorder>();
  auto rec3 = std::make_shared<LossRecorder>();
  original.model->train(1, next, {rec1});
  restored.model->train(1, next, {rec2});
  stateless.model->train(1, next, {rec3});
  ASSERT_EQ(rec1->losses.size(), 2u);
  ASSERT_EQ(rec2->losses.size(), 2u);
  // Bit for bit: the first loss depends on the parameters, the second on the momentum too.
  EXPECT_EQ(rec1->losses, rec2->losses);
  EXPECT_EQ(rec3->losses[0], rec1->losses[0]);
  EXPECT_NE(rec3->losses[1], rec1->losses[1]);
  for (size_t i = 0; i < opt.parameters().size(); ++i) {
    EXPECT_TRUE(bitwise_equal(opt2.parameters()[i].value(), opt.parameters()[i].value())) << i;
    EXPECT_FALSE(bitwise_equal(stateless.model->optimizer().parameters()[i].value(), opt.parameters()[i].value()))
        << i;
  }
  EXPECT_EQ(opt2.global_step(), 7);
}

TEST(Checkpoint, LoadIntoRefusesAMissingOrMisshapedTensor) {
  Trained a(1);
  NamedTensors entries = checkpoint_entries(a.model->optimizer());
  NamedTensors without_bias;
  for (const auto& e : entries)
    if (e.first != "fc2_bias") without_bias.push_back(e);
  try {
    load_into(a.model->optimizer(), without_bias);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'fc2_bias'"), std::string::npos) << e.what();
  }
  NamedTensors misshaped = entries;
  misshaped[0].second = Tensor({2, 2});
  EXPECT_THROW(load_into(a.model->optimizer(), misshaped), ShapeError);
}

TEST(Checkpoint, ModelCheckpointWritesPrefixEpochStepFiles) {
  const std::string dir = fresh_dir("callback");
  Trained t(3);
  auto per_epoch = std::make_shared<ModelCheckpoint>("net", dir);
  auto every_two = std::make_shared<ModelCheckpoint>("steps", dir, 2);
  t.model->train(1, random_rows(40, 4).batch(8), {per_epoch, every_two});  // 5 steps

  ASSERT_EQ(per_epoch->saved(), std::vector<std::string>{dir + "/net-1_5.ckpt"});
  EXPECT_EQ(every_two->saved(), (std::vector<std::string>{dir + "/steps-1_2.ckpt", dir + "/steps-1_4.ckpt"}));
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"net-1_5.ckpt", "steps-1_2.ckpt", "steps-1_4.ckpt"}))
      << "a .tmp file was left behind or a file is missing";

  const NamedTensors last = load_checkpoint(dir + "/net-1_5.ckpt");
  EXPECT_EQ(last.back().second.i32()[0], 5);
  const NamedTensors at_two = load_checkpoint(dir + "/steps-1_2.ckpt");
  EXPECT_EQ(at_two.back().second.i32()[0], 2);
  const NamedTensors now = checkpoint_entries(t.model->optimizer());
  for (size_t i = 0; i < now.size(); ++i) EXPECT_TRUE(bitwise_equal(last[i].second, now[i].second)) << now[i].first;
}

TEST(Checkpoint, MissingTruncatedAndForeignFilesThrowIoErrorNamingThePath) {
  const std::string dir = fresh_dir("bad");
  EXPECT_TRUE(refused_naming_path(dir + "/does-not-exist.ckpt"));

  Trained t(2);
  const std::string good = dir + "/good.ckpt";
  save_checkpoint(checkpoint_entries(t.model->optimizer()), good);
  const std::string bytes = read_bytes(good);
  ASSERT_GT(bytes.size(), 100u);
  const std::string half = dir + "/half.ckpt";
  write_bytes(half, bytes.substr(0, bytes.size() / 2));
  EXPECT_TRUE(refused_naming_path(half));
  // Every cut, not only the half: inside the head, a name, a tensor header or a payload.
  const std::string cut = dir + "/cut.ckpt";
  for (size_t n = 0; n < bytes.size(); n += 7) {
    write_bytes(cut, bytes.substr(0, n));
    EXPECT_TRUE(refused_naming_path(cut)) << "cut at " << n << " of " << bytes.size();
  }

  const std::string text = dir + "/notes.txt";
  write_bytes(text, "these are not the tensors you are looking for\n");
  EXPECT_TRUE(refused_naming_path(text));
  const std::string foreign_map = dir + "/tensor.bin";  // a msgpack map, but a tensor's
  write_bytes(foreign_map, serialize(Tensor({2, 2})));
  EXPECT_TRUE(refused_naming_path(foreign_map));
  EXPECT_TRUE(refused_naming_path(dir));  // a directory is not a checkpoint either
}

// A checkpoint whose head says `count` entries, then one entry `name` with a tensor header
// claiming `shape` (f32) and 16 payload bytes.
std::string forged_checkpoint(uint64_t count, const std::string& name, const std::vector<int64_t>& shape,
                              uint64_t nbytes) {
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> pk(b);
  pk.pack_map(3);
  pk.pack(std::string("format"));
  pk.pack(std::string("shardflow-checkpoint"));
  pk.pack(std::string("v"));
  pk.pack(uint32_t{1});
  pk.pack(std::string("count"));
  pk.pack(count);
  pk.pack(name);
  pk.pack_map(4);
  pk.pack(std::string("v"));
  pk.pack(uint32_t{1});
  pk.pack(std::string("dtype"));
  pk.pack(std::string("f32"));
  pk.pack(std::string("shape"));
  pk.pack(shape);
  pk.pack(std::string("nbytes"));
  pk.pack(nbytes);
  return std::string(b.data(), b.size()) + std::string(16, '\0');
}

std::string load_error(const std::string& path) {
  try {
    load_checkpoint(path);
  } catch (const IoError& e) {
    return e.what();
  }
  return "no error";
}

// Sizes a header claims are refused before anything is allocated, naming the file and tensor.
TEST(Checkpoint, ImplausibleSizesAreRefusedBeforeAllocatingNamingTheTensor) {
  const std::string dir = fresh_dir("sizes");
  const std::string huge = dir + "/huge.ckpt";
  write_bytes(huge, forged_checkpoint(1, "fc1.weight", {int64_t{1} << 30, int64_t{1} << 30}, uint64_t{1} << 62));
  const std::string msg = load_error(huge);
  EXPECT_EQ(msg.rfind("checkpoint '" + huge + "': tensor 'fc1.weight' (entry 0 of 1, byte ", 0), 0u) << msg;
  EXPECT_NE(msg.find("exceeds the size limit"), std::string::npos) << msg;

  const std::string past_end = dir + "/past_end.ckpt";  // 4 KiB claimed, 16 bytes present
  write_bytes(past_end, forged_checkpoint(1, "fc2.bias", {1024}, 4096));
  EXPECT_NE(load_error(past_end).find("tensor 'fc2.bias' (entry 0 of 1"), std::string::npos) << load_error(past_end);

  const std::string many = dir + "/many.ckpt";
  write_bytes(many, forged_checkpoint(uint64_t{1} << 60, "w", {2}, 8));
  EXPECT_NE(load_error(many).find("header declares 1152921504606846976 entries in a file of"), std::string::npos)
      << load_error(many);

  const std::string sparse = dir + "/sparse.ckpt";  // claims 128 GiB: refused before reading
  write_bytes(sparse, "");
  fs::resize_file(sparse, uint64_t{1} << 37);
  EXPECT_EQ(load_error(sparse), "checkpoint '" + sparse + "': 137438953472 bytes, more than the 68719476736 allowed");
  fs::remove(sparse);
}

}  // namespace
}  // namespace sf
