// resume_from in the modes whose first step builds the parameters' placement: semi-auto parallel
// (parameters cut to blocks by their ops' strategies), auto parallel (strategies searched) and
// pipeline parallel (each rank holds its stages' parameters). A run of 60 steps saving every 30,
// then a new program (another seed) resumed from step 30: bitwise equal on the same
// configuration; a semi-auto checkpoint continues on 1 device, and a 1-device one on semi-auto
// ranks, within 1e-5 relative; a pipeline checkpoint loads each stage's parameters on 1 device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/train/layers.h>
#include <shardflow/train/model.h>
#include <shardflow/train/pipeline_cell.h>
#include <shardflow/train/training_checkpoint.h>
#include "tests/train/checkpoint_dir_util.h"
#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"

namespace sf::traintest {
namespace {

constexpr int64_t kIn = 6, kHidden = 16, kSteps = 20, kEpochs = 3;  // 60 steps: 3 epochs of 20 batches

// x -> MatMul(w1) -> ReLU -> MatMul(w2): with `split`, w1's columns and w2's rows are cut over
// 2 devices (seed 001's column-then-row split), so each rank holds half of each weight.
class TwoLayer : public nn::Cell {
 public:
  explicit TwoLayer(bool split) {
    if (!split) return;
    matmul1.shard({{1, 1}, {1, 2}});
    relu.shard({{1, 2}});
    matmul2.shard({{1, 2}, {2, 1}});
  }
  Parameter& w1 = register_parameter("w1", {kIn, kHidden}, "xavier_uniform");
  Parameter& w2 = register_parameter("w2", {kHidden, 3}, "xavier_uniform");
  Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  Primitive& relu = register_primitive("relu", "ReLU");
  Primitive& matmul2 = register_primitive("matmul2", "MatMul");
  Value construct(GraphBuilder& b, Value x) override {
    return matmul2(b, {relu(b, {matmul1(b, {x, param(b, w1)})}), param(b, w2)});
  }
};

// kSteps batches of 8 rows per epoch, the whole set on every rank (semi-auto reads it whole).
dataset::Dataset rows(uint64_t shuffle_seed) {
  dataset::Dataset d = dataset::Dataset::generator(
      [](int64_t i) {
        Tensor x({kIn});
        for (int64_t k = 0; k < kIn; ++k) x.f32()[k] = normal_at(23, 0, static_cast<uint64_t>(i * kIn + k));
        const auto label = static_cast<int32_t>(uniform_at(23, 1, static_cast<uint64_t>(i)) * 3);
        return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
      },
      kSteps * 8, {"data", "label"});
  if (shuffle_seed) d = d.shuffle(shuffle_seed);
  return d.batch(8);
}

struct Outcome {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> values;  // what this rank holds, by parameter name
  uint64_t print = 0;
};

std::map<std::string, std::vector<float>> values_of(const ParameterList& params) {
  std::map<std::string, std::vector<float>> out;
  for (const Parameter& p : params) out[p.name()] = p.value().to_vector();
  return out;
}

// Trains kEpochs epochs of TwoLayer: from the start (seed 4) saving to `save_dir` every 30 steps,
// or (a new program, seed 77) resumed from `resume`.
Outcome train_two_layer(bool split, const std::string& save_dir, const std::string& resume = "",
                        uint64_t shuffle_seed = 5) {
  set_seed(resume.empty() ? 4 : 77);
  TwoLayer net(split);
  Model model(net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::Adam>(net.trainable_params(), 0.01f));
  const dataset::Dataset data = rows(shuffle_seed);
  auto log = std::make_shared<StepLog>(ParameterList{});
  std::vector<CallbackPtr> callbacks{log};
  if (!save_dir.empty()) callbacks.push_back(std::make_shared<CheckpointDir>(save_dir, 30, 0));
  const ResumePoint from = resume.empty() ? ResumePoint{} : resume_from(model, data, resume);
  model.train(kEpochs, data, callbacks, from);
  return {log->losses, values_of(net.get_parameters()), fingerprint(net.get_parameters())};
}

std::vector<float> tail(const std::vector<float>& v, size_t from) {
  return from <= v.size() ? std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(from), v.end())
                          : std::vector<float>{};
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_LE(std::abs(a[k] - b[k]), 1e-5f * std::max(1.0f, std::abs(b[k]))) << what << " [" << k << "]";
}

void semi_auto_resumes_bitwise(ParallelMode mode) {
  ParallelContextGuard guard({.parallel_mode = mode});
  const std::string dir = ckpttest::fresh_dir();
  std::vector<Outcome> full(2), rest(2);
  run_world(2, Wire::kInproc, [&](int rank) { full[rank] = train_two_layer(true, dir); });
  run_world(2, Wire::kInproc, [&](int rank) { rest[rank] = train_two_layer(true, "", dir + "/step_30"); });
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_EQ(full[rank].losses.size(), 60u);
    EXPECT_EQ(rest[rank].losses, tail(full[rank].losses, 30));
    EXPECT_EQ(rest[rank].print, full[rank].print) << "every parameter block, bitwise";
  }
  set_seed(0);
}

TEST(ResumeModes, SemiAutoParallelResumeFromStep30IsBitwiseEqual) {
  semi_auto_resumes_bitwise(ParallelMode::kSemiAutoParallel);
  // Each rank held half of each weight: the blocks differ, and each resumed rank read its own.
}

TEST(ResumeModes, AutoParallelResumeFromStep30IsBitwiseEqual) { semi_auto_resumes_bitwise(ParallelMode::kAutoParallel); }

// Semi-auto on 2 ranks (blocks of each weight) resumed on 1 device (whole weights), and the
// other way: the same global batches, so the runs agree to rounding.
TEST(ResumeModes, SemiAutoAndOneDeviceCheckpointsResumeOnEachOtherWithin1e5) {
  const std::string dir = ckpttest::fresh_dir();
  const Outcome one_full = train_two_layer(false, dir + "/one");
  std::vector<Outcome> semi_full(2), semi_from_one(2);
  {
    ParallelContextGuard guard({.parallel_mode = ParallelMode::kSemiAutoParallel});
    run_world(2, Wire::kInproc, [&](int rank) { semi_full[rank] = train_two_layer(true, dir + "/semi"); });
    run_world(2, Wire::kInproc,
              [&](int rank) { semi_from_one[rank] = train_two_layer(true, "", dir + "/one/step_30"); });
  }
  const Outcome one_from_semi = train_two_layer(false, "", dir + "/semi/step_30");
  // The uninterrupted runs agree to rounding themselves (the sharded sums add in another order).
  expect_close(semi_full[0].losses, one_full.losses, "semi-auto against 1 device");
  expect_close(one_from_semi.losses, tail(semi_full[0].losses, 30), "1 device resumed from semi-auto");
  for (const auto& [name, v] : one_full.values) expect_close(one_from_semi.values.at(name), v, name);
  for (int rank = 0; rank < 2; ++rank)
    expect_close(semi_from_one[rank].losses, tail(one_full.losses, 30), "semi-auto resumed from 1 device");
  set_seed(0);
}

AutoParallelContext two_stages() {
  return {.parallel_mode = ParallelMode::kSemiAutoParallel, .gradients_mean = true, .dataset_strategy = "full_batch",
          .pipeline_stages = 2};
}

// Records, at global step 30, the values of the parameters this rank's stages hold.
struct HeldAt30 : Callback {
  void on_step_end(const RunContext& ctx) override {
    if (ctx.global_step == 30) values = values_of(ctx.model->held_parameters());
  }
  std::map<std::string, std::vector<float>> values;
};

struct PipeOutcome {
  std::vector<float> losses;
  std::map<std::string, std::vector<float>> at30;
  std::map<std::string, std::vector<float>> end;  // held at the end
};

PipeOutcome train_pipeline(const std::string& save_dir, const std::string& resume = "") {
  set_seed(resume.empty() ? 4 : 77);
  auto net = pipe_net(4, {0, 0, 1, 1});
  nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 2);
  Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
  const dataset::Dataset data = pipe_rows(8 * kSteps).shuffle(3).batch(8);
  auto log = std::make_shared<StepLog>(ParameterList{});
  auto held = std::make_shared<HeldAt30>();
  std::vector<CallbackPtr> callbacks{log, held};
  if (!save_dir.empty()) callbacks.push_back(std::make_shared<CheckpointDir>(save_dir, 30, 0));
  const ResumePoint from = resume.empty() ? ResumePoint{} : resume_from(model, data, resume);
  model.train(kEpochs, data, callbacks, from);
  return {log->losses, held->values, values_of(model.held_parameters())};
}

TEST(ResumeModes, PipelineResumeFromStep30IsBitwiseEqualAndEachStageReadsItsOwn) {
  const std::string dir = ckpttest::fresh_dir();
  std::vector<PipeOutcome> full(4), rest(4);
  {
    // 2 stages x 2 data-parallel replicas.
    ParallelContextGuard guard(two_stages());
    run_world(4, Wire::kInproc, [&](int rank) { full[rank] = train_pipeline(dir); });
    run_world(4, Wire::kInproc, [&](int rank) { rest[rank] = train_pipeline("", dir + "/step_30"); });
  }
  for (int rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_EQ(full[rank].losses.size(), 60u);
    EXPECT_EQ(rest[rank].losses, tail(full[rank].losses, 30));
    EXPECT_EQ(rest[rank].end, full[rank].end) << "the parameters of this rank's stage, bitwise";
  }
  // The stages hold different parameters: stage 0 the first two layers, stage 1 the last two.
  EXPECT_TRUE(full[0].end.count("0.0.weight") && !full[0].end.count("3.0.weight"));
  EXPECT_TRUE(full[2].end.count("3.0.weight") && !full[2].end.count("0.0.weight"));

  // On 1 device every parameter comes from the stage that trained it (not a stale copy).
  set_seed(77);
  auto net = pipe_net(4);
  Model one(*net, std::make_shared<nn::CrossEntropyLoss>(),
            std::make_shared<nn::Momentum>(net->trainable_params(), 0.02f, 0.9f));
  const dataset::Dataset data = pipe_rows(8 * kSteps).shuffle(3).batch(8);
  EXPECT_EQ(resume_from(one, data, dir + "/step_30"), (ResumePoint{1, 10}));
  for (const Parameter& p : net->get_parameters()) {
    const int holder = full[0].at30.count(p.name()) ? 0 : 2;
    ASSERT_TRUE(full[holder].at30.count(p.name())) << p.name();
    EXPECT_EQ(p.value().to_vector(), full[holder].at30.at(p.name())) << p.name();
  }
  set_seed(0);
}

}  // namespace
}  // namespace sf::traintest
