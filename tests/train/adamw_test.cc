// AdamW (train/optimizer.h): its first steps against PyTorch's formula worked in double and by
// hand, decoupled decay (not Adam's L2 gradient) and the per-parameter exclusion, its state and
// hyper-parameters, the refusal of bad hyper-parameters naming the option, and a training
// checkpoint round trip: a run of 40 steps with AdamW and clipping, resumed from step 20 in a new
// program, ends bitwise equal; a resume with another weight decay or without clipping is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/core/rng.h>
#include <shardflow/train/layers.h>
#include <shardflow/train/model.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/training_checkpoint.h>
#include <shardflow/train/training_state.h>
#include "tests/train/checkpoint_dir_util.h"
#include "tests/train/parallel_fixture.h"
#include "tests/train/toy_data.h"

namespace sf::traintest {
namespace {

using ::testing::HasSubstr;
using nn::Adam;
using nn::AdamW;
using nn::decay_except_vectors;

Parameter make_param(const Shape& shape, const std::vector<float>& values, const std::string& name) {
  Parameter p(shape, "zeros");
  p.finalize(name, 0);
  p.value().copy_from(Tensor::from_vector(shape, values));
  return p;
}

Tensor grad(const Shape& shape, const std::vector<float>& values) { return Tensor::from_vector(shape, values); }

// PyTorch's AdamW on one element, in double, with the f32 hyper-parameters the optimizer holds.
struct Reference {
  double p, m = 0, v = 0;
  void step(double g, int t, double lr, double b1, double b2, double eps, double wd) {
    p *= 1 - lr * wd;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    p -= lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + eps);
  }
};

TEST(AdamW, FirstStepsMatchTheDecoupledBiasCorrectedFormula) {
  // eps is large enough (against gradients of ~0.1) that where it is added shows: to the
  // bias-corrected sqrt(v), as PyTorch does, not to sqrt(v) before the correction (Adam here).
  const double lr = 0.1f, b1 = 0.9f, b2 = 0.999f, eps = 1e-3f, wd = 0.5f;
  Parameter w = make_param({2, 2}, {1.0f, -2.0f, 4.0f, 0.5f}, "fc.weight");
  Parameter b = make_param({2}, {1.0f, -1.0f}, "fc.bias");
  AdamW opt({w, b}, 0.1f, 0.9f, 0.999f, 1e-3f, 0.5f, decay_except_vectors);
  EXPECT_TRUE(opt.decays(0));
  EXPECT_FALSE(opt.decays(1)) << "a vector (bias) is left undecayed by decay_except_vectors";

  const std::vector<std::vector<float>> gw = {
      {0.3f, -0.2f, 0.0f, 2.0f}, {-0.1f, 0.4f, 0.0f, 1.0f}, {0.5f, 0.5f, 0.0f, -3.0f}};
  const std::vector<std::vector<float>> gb = {{0.2f, -0.6f}, {0.1f, 0.3f}, {-0.4f, 0.2f}};
  std::vector<Reference> rw = {{1.0}, {-2.0}, {4.0}, {0.5}}, rb = {{1.0}, {-1.0}};
  for (int t = 1; t <= 3; ++t) {
    opt.step({grad({2, 2}, gw[t - 1]), grad({2}, gb[t - 1])});
    for (int k = 0; k < 4; ++k) {
      rw[k].step(gw[t - 1][k], t, lr, b1, b2, eps, wd);
      EXPECT_NEAR(w.value().f32()[k], rw[k].p, 2e-6) << "weight, step " << t << " element " << k;
    }
    for (int k = 0; k < 2; ++k) {
      rb[k].step(gb[t - 1][k], t, lr, b1, b2, eps, /*wd=*/0);
      EXPECT_NEAR(b.value().f32()[k], rb[k].p, 2e-6) << "bias, step " << t << " element " << k;
    }
    if (t == 1) {
      // By hand: at step 1 the bias-corrected m is g and sqrt(v) is |g|, so
      // p1 = p0 (1 - lr wd) - lr g / (|g| + eps): 1 * 0.95 - 0.1 * 0.3 / 0.301 for the first
      // element; a zero gradient leaves only the decay, 4 * 0.95 = 3.8 (Adam with an L2 term
      // would move it by about lr, to 3.9: the decay is not normalized by sqrt(v)); the bias,
      // undecayed, moves by the Adam term alone. (With eps added before the correction, as
      // Adam here, the first element would be 0.95 - 0.1 * 0.3 / (0.3 + 1e-3 / sqrt(0.001)).)
      EXPECT_NEAR(w.value().f32()[0], 0.95 - 0.1 * 0.3 / 0.301, 1e-6);
      EXPECT_NEAR(w.value().f32()[1], -1.9 + 0.1 * 0.2 / 0.201, 1e-6);
      EXPECT_FLOAT_EQ(w.value().f32()[2], 3.8f);
      EXPECT_NEAR(w.value().f32()[3], 0.475 - 0.1 * 2 / 2.001, 1e-6);
      EXPECT_NEAR(b.value().f32()[0], 1 - 0.1 * 0.2 / 0.201, 1e-6);
      EXPECT_NEAR(b.value().f32()[1], -1 + 0.1 * 0.6 / 0.601, 1e-6);
    }
  }
  // The zero-gradient element only decays: 4 * 0.95^3, its moments stay zero.
  EXPECT_NEAR(w.value().f32()[2], 4 * std::pow(0.95, 3), 1e-6);
  EXPECT_EQ(opt.global_step(), 3);

  const auto state = opt.state();
  ASSERT_EQ(state.size(), 4u);
  EXPECT_EQ(state[0].first, "moment1.fc.weight");
  EXPECT_EQ(state[1].first, "moment2.fc.weight");
  EXPECT_EQ(state[2].first, "moment1.fc.bias");
  EXPECT_EQ(state[3].first, "moment2.fc.bias");
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(state[0].second.f32()[k], rw[k].m, 1e-6) << k;
    EXPECT_NEAR(state[1].second.f32()[k], rw[k].v, 1e-7) << k;
  }
}

TEST(AdamW, DecaysEveryParameterByDefaultAndFollowsAFilter) {
  Parameter w = make_param({1, 1}, {2.0f}, "a.weight");
  Parameter b = make_param({1}, {2.0f}, "a.bias");
  AdamW all({w, b}, 0.1f, 0.9f, 0.999f, 1e-8f, 0.5f);
  all.step({grad({1, 1}, {0.0f}), grad({1}, {0.0f})});
  EXPECT_FLOAT_EQ(w.value().f32()[0], 1.9f);  // 2 * (1 - 0.1 * 0.5)
  EXPECT_FLOAT_EQ(b.value().f32()[0], 1.9f);
  // A filter over names: everything but "a.weight".
  AdamW named({w, b}, 0.1f, 0.9f, 0.999f, 1e-8f, 0.5f, [](const Parameter& p) { return p.name() != "a.weight"; });
  named.step({grad({1, 1}, {0.0f}), grad({1}, {0.0f})});
  EXPECT_FLOAT_EQ(w.value().f32()[0], 1.9f);
  EXPECT_FLOAT_EQ(b.value().f32()[0], 1.9f * 0.95f);
}

TEST(AdamW, KindAndHyperParametersAreRecorded) {
  Parameter w = make_param({1}, {1.0f}, "w");
  AdamW opt({w}, 0.01f, 0.8f, 0.99f, 1e-7f, 0.05f);
  EXPECT_EQ(opt.kind(), "adamw");
  EXPECT_FALSE(opt.in_graph_sgd_rate().has_value());
  const std::map<std::string, double> want{{"learning_rate", 0.01f}, {"beta1", 0.8f}, {"beta2", 0.99f},
                                           {"eps", 1e-7f},           {"weight_decay", 0.05f}};
  EXPECT_EQ(opt.hyper_parameters(), want);
  opt.set_max_grad_norm(2.5f);
  EXPECT_EQ(opt.hyper_parameters().at("max_grad_norm"), 2.5);
  opt.set_max_grad_norm(std::nullopt);
  EXPECT_EQ(opt.hyper_parameters(), want);
}

// The message of the InvalidArgument `fn` throws.
template <class Fn>
std::string refusal(Fn fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

TEST(AdamW, RefusesBadHyperParametersNamingThem) {
  Parameter w = make_param({1}, {1.0f}, "w");
  EXPECT_THAT(refusal([&] { AdamW({w}, -0.1f); }), HasSubstr("learning rate"));
  EXPECT_THAT(refusal([&] { AdamW({w}, 0.1f, 1.0f); }), HasSubstr("AdamW: beta1 must be in [0, 1), got 1"));
  EXPECT_THAT(refusal([&] { AdamW({w}, 0.1f, 0.9f, -0.5f); }), HasSubstr("AdamW: beta2 must be in [0, 1)"));
  EXPECT_THAT(refusal([&] { AdamW({w}, 0.1f, 0.9f, 0.999f, -1e-8f); }), HasSubstr("AdamW: eps"));
  EXPECT_THAT(refusal([&] { AdamW({w}, 0.1f, 0.9f, 0.999f, 1e-8f, -0.01f); }),
              HasSubstr("AdamW: weight_decay must be >= 0"));
  EXPECT_THAT(refusal([&] { AdamW({w}, 0.1f, 0.9f, 0.999f, 1e-8f, NAN); }), HasSubstr("weight_decay"));
  EXPECT_THAT(refusal([&] { Adam({w}, 0.1f, 0.9f, 1.0f); }), HasSubstr("Adam: beta2"));
  AdamW opt({w}, 0.1f);
  EXPECT_THAT(refusal([&] { opt.set_max_grad_norm(0.0f); }), HasSubstr("max_grad_norm must be positive"));
  EXPECT_THAT(refusal([&] { opt.set_max_grad_norm(-1.0f); }), HasSubstr("max_grad_norm"));
  EXPECT_THAT(refusal([&] { opt.set_max_grad_norm(INFINITY); }), HasSubstr("max_grad_norm"));
  EXPECT_FALSE(opt.max_grad_norm().has_value()) << "a refused value changes nothing";
}

// --- checkpoint round trip -------------------------------------------------------------------

constexpr int64_t kBatches = 10, kEpochs = 4;  // 40 steps: 4 epochs of 10 batches

std::shared_ptr<nn::SequentialCell> net_with_biases() {
  return std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(kIn, 8), std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(8, kClasses)});
}

dataset::Dataset rows() { return random_rows(kBatches * 8, 31).shuffle(3).batch(8); }

std::shared_ptr<nn::AdamW> adamw_of(nn::Cell& net, float weight_decay = 0.1f, std::optional<float> clip = 0.3f) {
  auto opt = std::make_shared<nn::AdamW>(net.trainable_params(), 0.02f, 0.9f, 0.999f, 1e-8f, weight_decay,
                                         nn::decay_except_vectors);
  opt->set_max_grad_norm(clip);
  return opt;
}

struct Outcome {
  std::vector<float> losses;
  std::vector<double> norms;
  uint64_t print = 0;
  uint64_t state_print = 0;  // the optimizer's moments
};

// Records each step's loss and gradient norm.
struct NormLog : Callback {
  std::vector<float> losses;
  std::vector<double> norms;
  void on_step_end(const RunContext& ctx) override {
    losses.push_back(ctx.loss);
    norms.push_back(ctx.optimizer->last_grad_norm().value_or(-1));
  }
};

uint64_t state_fingerprint(nn::Optimizer& opt) {
  ParameterList held;
  for (const auto& [name, t] : opt.state()) {
    Parameter p(t.shape(), "zeros");
    p.value() = t;
    held.push_back(p);
  }
  return fingerprint(held);
}

// kEpochs epochs from the start (seed 4), saving to `save_dir` every 20 steps, or (a new
// program, seed 77) resumed from `resume`.
Outcome train(const std::string& save_dir, const std::string& resume = "") {
  set_seed(resume.empty() ? 4 : 77);
  auto net = net_with_biases();
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), adamw_of(*net));
  const dataset::Dataset data = rows();
  auto log = std::make_shared<NormLog>();
  std::vector<CallbackPtr> callbacks{log};
  if (!save_dir.empty()) callbacks.push_back(std::make_shared<CheckpointDir>(save_dir, 20, 0));
  const ResumePoint from = resume.empty() ? ResumePoint{} : resume_from(model, data, resume);
  model.train(kEpochs, data, callbacks, from);
  set_seed(0);
  return {log->losses, log->norms, fingerprint(net->get_parameters()), state_fingerprint(model.optimizer())};
}

TEST(AdamW, CheckpointRoundTripContinuesBitwise) {
  const std::string dir = ckpttest::fresh_dir();
  const Outcome full = train(dir);
  ASSERT_EQ(full.losses.size(), 40u);
  // Clipping was active: every step's norm is above max_grad_norm (0.3), so the run exercises it.
  for (double n : full.norms) EXPECT_GT(n, 0.3);
  const Outcome rest = train("", dir + "/step_20");
  ASSERT_EQ(rest.losses.size(), 20u);
  EXPECT_EQ(rest.losses, std::vector<float>(full.losses.begin() + 20, full.losses.end()));
  EXPECT_EQ(rest.norms, std::vector<double>(full.norms.begin() + 20, full.norms.end()));
  EXPECT_EQ(rest.print, full.print) << "every parameter, bitwise";
  EXPECT_EQ(rest.state_print, full.state_print) << "both moments of every parameter, bitwise";
}

TEST(AdamW, TrainingStateRefusesAnotherOptimizerWeightDecayOrClipping) {
  set_seed(4);
  auto net = net_with_biases();
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), adamw_of(*net));
  const dataset::Dataset data = rows();
  model.train(1, data);
  const TrainingState state = capture_training_state(model, data, {1, 0});
  EXPECT_EQ(state.scalars["optimizer"]["kind"], "adamw");
  // Both moments of each of the 4 parameters (2 weights, 2 biases), as Adam's are saved.
  int moments = 0;
  for (const auto& [name, t] : state.tensors)
    moments += name.rfind("moment1.", 0) == 0 || name.rfind("moment2.", 0) == 0;
  EXPECT_EQ(moments, 8);

  // The message of restoring `state` into a new network with the optimizer `make` gives.
  auto refused = [&](const std::function<std::shared_ptr<nn::Optimizer>(nn::Cell&)>& make) {
    auto other = net_with_biases();
    Model m(*other, std::make_shared<nn::CrossEntropyLoss>(), make(*other));
    return refusal([&] { restore_training_state(m, data, state); });
  };
  EXPECT_THAT(refused([](nn::Cell& n) { return std::make_shared<nn::Adam>(n.trainable_params(), 0.02f); }),
              HasSubstr("adamw"));
  EXPECT_THAT(refused([](nn::Cell& n) { return adamw_of(n, 0.2f); }), HasSubstr("weight_decay"));
  EXPECT_THAT(refused([](nn::Cell& n) { return adamw_of(n, 0.1f, std::nullopt); }), HasSubstr("max_grad_norm"));
  // The same configuration restores.
  set_seed(77);
  auto same = net_with_biases();
  Model m(*same, std::make_shared<nn::CrossEntropyLoss>(), adamw_of(*same));
  EXPECT_EQ(restore_training_state(m, data, state), (ResumePoint{1, 0}));
  EXPECT_EQ(fingerprint(same->get_parameters()), fingerprint(net->get_parameters()));
  EXPECT_EQ(state_fingerprint(m.optimizer()), state_fingerprint(model.optimizer()));
  set_seed(0);
}

}  // namespace
}  // namespace sf::traintest
