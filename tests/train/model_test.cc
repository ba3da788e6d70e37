// Tests for Model (train/model.h): training with the SGD step compiled into the graph equals
// the same run done by hand with value_and_grad + SGD::step; a label column of the wrong
// dtype is refused before any step; LossMonitor's exact output; eval_accuracy's value.
#include <shardflow/train/model.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include "toy_data.h"
#include <shardflow/train/mlp.h>

namespace sf {
namespace {

using traintest::kClasses;
using traintest::kIn;
using traintest::random_rows;


// Rows whose label is the argmax of a fixed linear map of the features: linearly separable.
dataset::Dataset separable_rows(int64_t n, uint64_t seed) {
  static const float kW[kClasses][kIn] = {{2, 1, 0, -1}, {-1, 2, 1, 0}, {0, -1, -2, 1}};
  return dataset::Dataset::generator(
      [seed](int64_t i) {
        Tensor x({kIn});
        for (int64_t k = 0; k < kIn; ++k)
          x.f32()[k] = -1.0f + 2.0f * uniform_at(seed, 0, static_cast<uint64_t>(i * kIn + k));
        int32_t best = 0;
        float best_score = -1e30f;
        for (int32_t c = 0; c < kClasses; ++c) {
          float s = 0;
          for (int64_t k = 0; k < kIn; ++k) s += kW[c][k] * x.f32()[k];
          if (s > best_score) best_score = s, best = c;
        }
        return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{best})};
      },
      n, {"data", "label"});
}

// Records what every step reports.
struct StepRecorder : Callback {
  std::vector<float> losses;
  std::vector<int64_t> epochs, steps, global_steps;
  void on_step_end(const RunContext& ctx) override {
    losses.push_back(ctx.loss);
    epochs.push_back(ctx.epoch);
    steps.push_back(ctx.step_in_epoch);
    global_steps.push_back(ctx.global_step);
  }
};

std::vector<Tensor> snapshot(const ParameterList& params) {
  std::vector<Tensor> out;
  for (const Parameter& p : params) out.push_back(p.value().clone());
  return out;
}

class ModelTest : public ::testing::Test {
 protected:
  void TearDown() override { set_seed(0); }
};

TEST_F(ModelTest, InGraphSgdEqualsManualValueAndGradSteps) {
  // 84 rows in batches of 8 without dropping the remainder: 10 full batches and one of 4 per
  // epoch, so the run switches programs mid-epoch; shuffled, so epochs differ; 22 steps.
  const dataset::Dataset ds = random_rows(84, 21).shuffle(3).batch(8, false);
  constexpr int kEpochs = 2;
  constexpr float kLr = 0.1f;

  set_seed(5);
  nn::Mlp net_a(kIn, {8}, kClasses);
  Model model(net_a, nn::CrossEntropyLoss(), nn::SGD(net_a.trainable_params(), kLr));
  ASSERT_TRUE(model.optimizer().in_graph_sgd_rate().has_value());
  auto rec = std::make_shared<StepRecorder>();
  model.train(kEpochs, ds, {rec});

  set_seed(5);
  nn::Mlp net_b(kIn, {8}, kClasses);
  const ParameterList params_b = net_b.trainable_params();
  nn::SGD opt_b(params_b, kLr);
  GradFunction grad_fn = value_and_grad(
      [&](GraphBuilder& b, const std::vector<Value>& in) { return nn::CrossEntropyLoss()(b, net_b(b, in[0]), in[1]); },
      params_b);
  std::vector<float> manual_losses;
  for (int64_t e = 0; e < kEpochs; ++e) {
    dataset::BatchIterator it = ds.iterator(e);
    while (const std::vector<Tensor>* batch = it.next()) {
      const auto r = grad_fn(*batch);
      manual_losses.push_back(r.loss);
      opt_b.step(r.grads);
    }
  }

  ASSERT_EQ(manual_losses.size(), 22u);
  ASSERT_EQ(rec->losses.size(), manual_losses.size());
  for (size_t i = 0; i < manual_losses.size(); ++i)
    EXPECT_NEAR(rec->losses[i], manual_losses[i], 1e-5 * std::fabs(manual_losses[i])) << "step " << i;
  EXPECT_NE(rec->losses.front(), rec->losses.back());

  const ParameterList params_a = model.optimizer().parameters();
  for (size_t i = 0; i < params_a.size(); ++i) {
    const Tensor& a = params_a[i].value();
    const Tensor& b = params_b[i].value();
    float max_diff = 0;
    for (int64_t k = 0; k < a.numel(); ++k) max_diff = std::max(max_diff, std::fabs(a.f32()[k] - b.f32()[k]));
    EXPECT_LE(max_diff, 1e-5f) << params_a[i].name();
  }
  EXPECT_EQ(model.optimizer().global_step(), 22);
  EXPECT_EQ(rec->global_steps.back(), 22);
  EXPECT_EQ(rec->steps[10], 11);  // the short batch is step 11 of epoch 1
  EXPECT_EQ(rec->epochs[11], 2);

  // The update really ran inside the graph: every parameter has an update op of its own.
  ASSERT_NE(model.train_program(), nullptr);
  for (const Parameter& p : params_a) {
    int updates = 0;
    for (const Node& n : model.train_program()->graph.nodes())
      updates += (n.op == "ApplyGradientDescent" || n.op == "MatMulGradientDescent") &&
                 n.name.rfind("Optimizer/" + p.name() + "/", 0) == 0;
    EXPECT_GE(updates, 1) << "no in-graph update for " << p.name();
  }
}

TEST_F(ModelTest, FloatLabelsAreRefusedBeforeAnyStep) {
  const dataset::Dataset ds = random_rows(16, 2)
                                  .map({dataset::TypeCast(DType::kF32)}, "label")
                                  .batch(8);
  ASSERT_EQ(ds.column("label").dtype(), DType::kF32);
  set_seed(1);
  nn::Mlp net(kIn, {8}, kClasses);
  Model model(net, nn::CrossEntropyLoss(), nn::Momentum(net.trainable_params(), 0.1f, 0.9f));
  const std::vector<Tensor> before = snapshot(model.optimizer().parameters());
  auto rec = std::make_shared<StepRecorder>();
  try {
    model.train(1, ds, {rec});
    FAIL() << "expected an error for f32 labels";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("labels must be i32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f32"), std::string::npos) << msg;
  }
  EXPECT_TRUE(rec->losses.empty());
  EXPECT_EQ(model.optimizer().global_step(), 0);
  const ParameterList& after = model.optimizer().parameters();
  for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(bitwise_equal(after[i].value(), before[i])) << i;
}

TEST_F(ModelTest, LossMonitorPrintsMindSporeLines) {
  const dataset::Dataset ds = random_rows(48, 4).batch(8);  // 6 steps per epoch
  set_seed(2);
  nn::Mlp net(kIn, {8}, kClasses);
  Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.05f));
  std::ostringstream out;
  auto rec = std::make_shared<StepRecorder>();
  model.train(2, ds, {std::make_shared<LossMonitor>(2, out), rec});
  ASSERT_EQ(rec->losses.size(), 12u);

  std::istringstream lines(out.str());
  const std::regex pattern(R"(epoch: (\d+) step: (\d+), loss is (\S+))");
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, pattern)) << "line " << n << ": '" << line << "'";
    const int epoch = 1 + n / 3, step = 2 * (n % 3 + 1);
    EXPECT_EQ(std::stoi(m[1]), epoch) << line;
    EXPECT_EQ(std::stoi(m[2]), step) << line;
    const float loss = rec->losses[static_cast<size_t>((epoch - 1) * 6 + step - 1)];
    char* end = nullptr;
    const std::string text = m[3];
    const double parsed = std::strtod(text.c_str(), &end);
    EXPECT_EQ(*end, '\0') << text;
    EXPECT_EQ(parsed, static_cast<double>(loss)) << text << " does not parse back to the loss";
    EXPECT_EQ(static_cast<float>(parsed), loss);
    ++n;
  }
  EXPECT_EQ(n, 6);
}

TEST_F(ModelTest, EvalAccuracyCountsArgmaxHits) {
  set_seed(3);
  nn::Mlp net(kIn, {6}, kClasses);
  const ParameterList params = net.trainable_params();
  // Logits of the untrained net computed here in double (weights are stored (in, out)).
  const int64_t n = 50;
  Tensor x({n, kIn});
  fill_random(x, Distribution::kNormal, 0.0f, 1.0f, 8, 0);
  std::vector<float> kept_x;
  std::vector<int32_t> argmax;
  for (int64_t r = 0; r < n; ++r) {
    std::vector<double> h(6), logits(kClasses);
    for (int64_t j = 0; j < 6; ++j) {
      double s = params[1].value().f32()[j];
      for (int64_t k = 0; k < kIn; ++k) s += x.f32()[r * kIn + k] * double{params[0].value().f32()[k * 6 + j]};
      h[j] = std::max(s, 0.0);
    }
    for (int64_t c = 0; c < kClasses; ++c) {
      logits[c] = params[3].value().f32()[c];
      for (int64_t j = 0; j < 6; ++j) logits[c] += h[j] * params[2].value().f32()[j * kClasses + c];
    }
    std::vector<double> sorted = logits;
    std::sort(sorted.begin(), sorted.end());
    if (sorted[2] - sorted[1] < 1e-4) continue;  // a near tie could go either way in f32
    argmax.push_back(static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    for (int64_t k = 0; k < kIn; ++k) kept_x.push_back(x.f32()[r * kIn + k]);
  }
  const auto rows = static_cast<int64_t>(argmax.size());
  ASSERT_GE(rows, 40);
  std::vector<int32_t> wrong(argmax);
  for (int32_t& l : wrong) l = (l + 1) % kClasses;
  const Tensor features = Tensor::from_vector({rows, kIn}, kept_x);

  Model model(net, nn::CrossEntropyLoss(), nn::SGD(params, 0.1f));
  // Batches of 16 with a short last one, so evaluation also uses a second program.
  const auto right_set =
      dataset::Dataset::from_columns({"data", "label"}, {features, Tensor::from_vector({rows}, argmax)}).batch(16, false);
  const auto wrong_set =
      dataset::Dataset::from_columns({"data", "label"}, {features, Tensor::from_vector({rows}, wrong)}).batch(16, false);
  EXPECT_EQ(model.eval_accuracy(right_set), 1.0);
  EXPECT_EQ(model.eval_accuracy(wrong_set), 0.0);
  // Half right, half wrong.
  std::vector<int32_t> mixed(argmax);
  for (int64_t r = 0; r < rows; r += 2) mixed[static_cast<size_t>(r)] = wrong[static_cast<size_t>(r)];
  const auto mixed_set =
      dataset::Dataset::from_columns({"data", "label"}, {features, Tensor::from_vector({rows}, mixed)}).batch(16, false);
  EXPECT_DOUBLE_EQ(model.eval_accuracy(mixed_set), static_cast<double>(rows / 2) / static_cast<double>(rows));
}

TEST_F(ModelTest, LearnsALinearlySeparableProblem) {
  const dataset::Dataset train_set = separable_rows(256, 30).shuffle(1).batch(16);
  const dataset::Dataset eval_set = separable_rows(256, 31).batch(64);
  set_seed(4);
  nn::Mlp net(kIn, {16}, kClasses);
  Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.2f));
  const double before = model.eval_accuracy(eval_set);
  EXPECT_GE(before, 0.0);
  EXPECT_LE(before, 1.0);
  EXPECT_LT(before, 0.8);
  model.train(10, train_set);
  const double after = model.eval_accuracy(eval_set);
  EXPECT_GT(after, 0.9) << "accuracy " << before << " -> " << after;
  EXPECT_LE(after, 1.0);
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

// Splitting each batch into row blocks (one network copy per block, run concurrently) trains
// the same model as one block: the same loss every step and the same parameters at the end.
TEST(ModelSplits, BatchSplitsEqualTheOneDeviceRun) {
  const dataset::Dataset ds = random_rows(84, 21).shuffle(3).batch(8, false);  // ends on a batch of 4
  auto run = [&](ExecOptions opts, const std::string& optimizer) {
    ds.set_epoch(0);  // each run is a new training from epoch 0 (the dataset counts its epochs)
    set_seed(5);
    nn::Mlp net(kIn, {16, 8}, kClasses);
    Model model(net, std::make_shared<nn::CrossEntropyLoss>(),
                nn::make_optimizer(optimizer, net.trainable_params(), 0.1f), opts);
    auto rec = std::make_shared<StepRecorder>();
    model.train(2, ds, {rec});
    set_seed(0);
    return std::make_pair(rec->losses, snapshot(model.optimizer().parameters()));
  };
  for (const std::string optimizer : {"sgd", "momentum"}) {
    const auto [want_losses, want_params] = run({.threads = 1}, optimizer);
    for (ExecOptions opts : {ExecOptions{.threads = 2}, ExecOptions{.threads = 2, .batch_splits = 4},
                             ExecOptions{.threads = 1, .batch_splits = 2}}) {
      const auto [losses, params] = run(opts, optimizer);
      const std::string what = optimizer + ", threads " + std::to_string(opts.threads) + ", splits " +
                               std::to_string(opts.batch_splits);
      ASSERT_EQ(losses.size(), want_losses.size()) << what;
      for (size_t i = 0; i < losses.size(); ++i)
        EXPECT_NEAR(losses[i], want_losses[i], 2e-5 * std::fabs(want_losses[i])) << what << ", step " << i;
      for (size_t p = 0; p < params.size(); ++p)
        for (int64_t k = 0; k < params[p].numel(); ++k)
          ASSERT_NEAR(params[p].f32()[k], want_params[p].f32()[k], 1e-5f) << what << ", parameter " << p;
    }
  }
}

}  // namespace
}  // namespace sf
