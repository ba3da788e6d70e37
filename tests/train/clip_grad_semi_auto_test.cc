// Clipping by global norm under semi-auto parallel on 8 virtual devices (dp 2 x tp 4): an MLP
// whose weights and first bias are cut over "tp" Megatron's way and replicated over "dp", and
// whose second bias and last weight are replicated on all 8 ranks. The norm of the ranks'
// gradient blocks, counted with the placement SemiAutoStep gives, equals the one-device norm to
// 1e-6 relative, while counting every copy (or only a rank's own blocks) is off by far more; and
// Model::train with clipping active (SGD with momentum, and AdamW) reports the losses and norms
// of one device within 1e-5 relative, every rank the same; a clipped AdamW run saved with
// CheckpointDir and resumed in a new program continues bitwise on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/comm/rank_context.h>
#include <shardflow/parallel/layout.h>
#include <shardflow/train/clip_grad.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/model.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/primitive.h>
#include <shardflow/train/training_checkpoint.h>
#include <shardflow/train/value_and_grad.h>
#include "tests/train/checkpoint_dir_util.h"
#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"

namespace sf::traintest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace clip_grad_semi_auto_test {

constexpr int kDevices = 8;
constexpr int64_t kDp = 2, kTp = 4, kHidden = 24, kClasses = 10, kBatch = 16, kSteps = 6;
constexpr float kMaxNorm = 0.2f;  // below every step's gradient norm: clipping is active throughout

// x -> MatMul(w0) -> BiasAdd(b0) -> ReLU -> MatMul(w1) -> BiasAdd(b1) -> ReLU -> MatMul(w2).
// With `split`: w0 by columns and b0 over tp (column parallel), w1 by rows over tp (row
// parallel, a partial sum reduced before b1), b1 and w2 whole; the batch over dp. So w0, b0, w1
// have 4 blocks held by 2 ranks each, b1 and w2 one block held by all 8.
class ShardedMlp : public nn::Cell {
 public:
  explicit ShardedMlp(bool split) {
    if (!split) return;
    Layout layout({kDp, kTp}, {"dp", "tp"});
    matmul0.shard({layout("dp", "None"), layout("None", "tp")});
    bias0.shard({layout("dp", "tp"), layout("tp")});
    relu0.shard({{kDp, kTp}});
    matmul1.shard({layout("dp", "tp"), layout("tp", "None")});
    bias1.shard({layout("dp", "None"), layout("None")});
    relu1.shard({{kDp, 1}});
    matmul2.shard({layout("dp", "None"), layout("None", "None")});
  }
  Parameter& w0 = register_parameter("w0", {kPipeFeatures, kHidden}, "he_uniform");
  Parameter& b0 = register_parameter("b0", {kHidden}, "uniform");
  Parameter& w1 = register_parameter("w1", {kHidden, kHidden}, "he_uniform");
  Parameter& b1 = register_parameter("b1", {kHidden}, "uniform");
  Parameter& w2 = register_parameter("w2", {kHidden, kClasses}, "xavier_uniform");
  Primitive& matmul0 = register_primitive("matmul0", "MatMul");
  Primitive& bias0 = register_primitive("bias0", "BiasAdd");
  Primitive& relu0 = register_primitive("relu0", "ReLU");
  Primitive& matmul1 = register_primitive("matmul1", "MatMul");
  Primitive& bias1 = register_primitive("bias1", "BiasAdd");
  Primitive& relu1 = register_primitive("relu1", "ReLU");
  Primitive& matmul2 = register_primitive("matmul2", "MatMul");
  Value construct(GraphBuilder& b, Value x) override {
    x = relu0(b, {bias0(b, {matmul0(b, {x, param(b, w0)}), param(b, b0)})});
    x = relu1(b, {bias1(b, {matmul1(b, {x, param(b, w1)}), param(b, b1)})});
    return matmul2(b, {x, param(b, w2)});
  }
};

dataset::Dataset batches() { return pipe_rows(kBatch * kSteps).batch(kBatch); }

AutoParallelContext semi_auto() { return {.parallel_mode = ParallelMode::kSemiAutoParallel}; }

bool close(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

// --- the norm of the first batch's gradients --------------------------------------------------

LossBuilder loss_of(nn::Cell& net) {
  return [&net](GraphBuilder& b, const std::vector<Value>& in) {
    return nn::CrossEntropyLoss()(b, net(b, in[0]), in[1]);
  };
}

TEST(ClipGradSemiAuto, GlobalNormOfTheBlocksIsTheOneDeviceNorm) {
  dataset::BatchIterator it = batches().iterator(0);
  const std::vector<Tensor> batch = *it.next();

  set_seed(3);
  ShardedMlp whole(false);
  GradFunction one(loss_of(whole), whole.trainable_params());
  const double one_device = nn::global_grad_norm(one(batch).grads);

  std::vector<double> norms(kDevices), naive(kDevices), local(kDevices);
  std::vector<int> counted(kDevices);
  {
    ParallelContextGuard guard(semi_auto());
    run_world(kDevices, Wire::kInproc, [&](int rank) {
      set_seed(3);
      ShardedMlp net(true);
      GradFunction grad(loss_of(net), net, net.trainable_params());
      const std::vector<Tensor>& grads = grad(batch).grads;
      const nn::GradPlacement& placement = grad.semi_auto_program()->grad_placement;
      counted[rank] = static_cast<int>(std::count(placement.counted.begin(), placement.counted.end(), true));
      norms[rank] = nn::global_grad_norm(grads, placement);
      naive[rank] = nn::global_grad_norm(grads, {.counted = {}, .group = placement.group});
      local[rank] = nn::global_grad_norm(grads);
    });
  }
  set_seed(0);
  // w0, b0, w1 (tp blocks, dp replicas) count on the dp-lowest rank of each pair; b1 and w2 on
  // rank 0 only. Which ranks those are follows the device matrix: only the totals are fixed.
  int blocks = 0;
  for (int c : counted) blocks += c;
  EXPECT_EQ(blocks, 3 * kTp + 2) << "each of the 14 distinct blocks counted on exactly one rank";
  EXPECT_EQ(counted[0], 5) << "rank 0 holds a block of each parameter and is the lowest of each group";
  for (int rank = 0; rank < kDevices; ++rank) {
    SCOPED_TRACE(rank);
    EXPECT_TRUE(close(norms[rank], one_device, 1e-6)) << norms[rank] << " vs one device " << one_device;
    EXPECT_EQ(norms[rank], norms[0]) << "every rank gets the same bits";
    // What the complaint saw: replicated blocks counted once per replica, or sharded ones only
    // as one rank holds them.
    EXPECT_FALSE(close(naive[rank], one_device, 0.05)) << "naive " << naive[rank] << " vs " << one_device;
    EXPECT_FALSE(close(local[rank], one_device, 0.05)) << "local " << local[rank] << " vs " << one_device;
  }
}

// --- training with clipping active ------------------------------------------------------------

using MakeOptimizer = std::function<std::shared_ptr<nn::Optimizer>(const ParameterList&)>;

struct Trace {
  std::vector<float> losses;
  std::vector<double> norms;
};

// Records each step's loss and global gradient norm.
struct NormLog : Callback {
  Trace run;
  void on_step_end(const RunContext& ctx) override {
    run.losses.push_back(ctx.loss);
    run.norms.push_back(ctx.optimizer->last_grad_norm().value_or(-1));
  }
};

Trace train(bool split, const MakeOptimizer& make) {
  set_seed(3);
  ShardedMlp net(split);
  Model model(net, std::make_shared<nn::CrossEntropyLoss>(), make(net.trainable_params()));
  auto log = std::make_shared<NormLog>();
  model.train(1, batches(), {log});
  set_seed(0);
  return log->run;
}

void expect_clipped_semi_auto_equals_one_device(const MakeOptimizer& make, float max_norm) {
  const Trace one = train(false, make);
  ASSERT_EQ(one.losses.size(), static_cast<size_t>(kSteps));
  for (double n : one.norms) EXPECT_GT(n, 1.5 * max_norm) << "clipping is active on every step";
  std::vector<Trace> ranks(kDevices);
  {
    ParallelContextGuard guard(semi_auto());
    run_world(kDevices, Wire::kInproc, [&](int rank) { ranks[rank] = train(true, make); });
  }
  for (int rank = 0; rank < kDevices; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_EQ(ranks[rank].losses.size(), one.losses.size());
    EXPECT_EQ(ranks[rank].losses, ranks[0].losses);
    EXPECT_EQ(ranks[rank].norms, ranks[0].norms);
    for (size_t s = 0; s < one.losses.size(); ++s) {
      EXPECT_TRUE(close(ranks[rank].losses[s], one.losses[s], 1e-5))
          << "step " << s + 1 << ": loss " << ranks[rank].losses[s] << " vs one device " << one.losses[s];
      EXPECT_TRUE(close(ranks[rank].norms[s], one.norms[s], s == 0 ? 1e-6 : 1e-5))
          << "step " << s + 1 << ": norm " << ranks[rank].norms[s] << " vs one device " << one.norms[s];
    }
  }
}

TEST(ClipGradSemiAuto, ClippedMomentumTrainingMatchesOneDevice) {
  const MakeOptimizer clipped = [](const ParameterList& p) {
    auto opt = std::make_shared<nn::Momentum>(p, 0.05f, 0.9f);
    opt->set_max_grad_norm(kMaxNorm);
    return opt;
  };
  expect_clipped_semi_auto_equals_one_device(clipped, kMaxNorm);
  // The clipping changes the run: without it one device's losses differ after the first step.
  const Trace unclipped =
      train(false, [](const ParameterList& p) { return std::make_shared<nn::Momentum>(p, 0.05f, 0.9f); });
  const Trace one = train(false, clipped);
  EXPECT_EQ(unclipped.losses[0], one.losses[0]);
  EXPECT_FALSE(close(unclipped.losses.back(), one.losses.back(), 1e-3));
}


std::shared_ptr<nn::Optimizer> clipped_adamw(const ParameterList& p) {
  auto opt = std::make_shared<nn::AdamW>(p, 0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, nn::decay_except_vectors);
  opt->set_max_grad_norm(kMaxNorm);
  return opt;
}

TEST(ClipGradSemiAuto, ClippedAdamWTrainingMatchesOneDevice) {
  expect_clipped_semi_auto_equals_one_device(clipped_adamw, kMaxNorm);
}

// 2 epochs (12 steps) saving every 6 steps, or (a new program, seed 77) resumed from `resume`.
struct Resumable {
  Trace trace;
  uint64_t print = 0;
};
Resumable train_saving(const std::string& save_dir, const std::string& resume = "") {
  set_seed(resume.empty() ? 3 : 77);
  ShardedMlp net(true);
  Model model(net, std::make_shared<nn::CrossEntropyLoss>(), clipped_adamw(net.trainable_params()));
  const dataset::Dataset data = batches();
  auto log = std::make_shared<NormLog>();
  std::vector<CallbackPtr> callbacks{log};
  if (!save_dir.empty()) callbacks.push_back(std::make_shared<CheckpointDir>(save_dir, kSteps, 0));
  const ResumePoint from = resume.empty() ? ResumePoint{} : resume_from(model, data, resume);
  model.train(2, data, callbacks, from);
  set_seed(0);
  return {log->run, fingerprint(net.get_parameters())};
}

TEST(ClipGradSemiAuto, ClippedAdamWResumesBitwiseOnEveryRank) {
  ParallelContextGuard guard(semi_auto());
  const std::string dir = ckpttest::fresh_dir();
  std::vector<Resumable> full(kDevices), rest(kDevices);
  run_world(kDevices, Wire::kInproc, [&](int rank) { full[rank] = train_saving(dir); });
  run_world(kDevices, Wire::kInproc,
            [&](int rank) { rest[rank] = train_saving("", dir + "/step_" + std::to_string(kSteps)); });
  for (int rank = 0; rank < kDevices; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_EQ(full[rank].trace.losses.size(), static_cast<size_t>(2 * kSteps));
    for (double n : full[rank].trace.norms) EXPECT_GT(n, kMaxNorm) << "clipping is active";
    EXPECT_EQ(rest[rank].trace.losses, std::vector<float>(full[rank].trace.losses.begin() + kSteps,
                                                          full[rank].trace.losses.end()));
    EXPECT_EQ(rest[rank].trace.norms, std::vector<double>(full[rank].trace.norms.begin() + kSteps,
                                                          full[rank].trace.norms.end()));
    EXPECT_EQ(rest[rank].print, full[rank].print) << "this rank's parameter blocks, bitwise";
  }
}

}  // namespace clip_grad_semi_auto_test
}  // namespace
}  // namespace sf::traintest
