// TrainingState (train/training_state.h) and Model::train from a ResumePoint: a run captured
// within an epoch and resumed by a new program (another seed, a new network, Model and dataset)
// continues bitwise equal to the uninterrupted run — every parameter, BatchNorm's moving
// statistics included, and the same loss lines after the point — stand-alone and data parallel,
// on a shuffled dataset, with Adam and Momentum. Restores from another optimizer, dataset or
// network are refused, naming the item, and change nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/train/conv_layers.h>
#include <shardflow/train/layers.h>
#include <shardflow/train/load_param_into_net.h>
#include <shardflow/train/model.h>
#include <shardflow/train/training_state.h>
#include "tests/train/parallel_fixture.h"

namespace sf::traintest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace training_state_test {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr int64_t kFeatures = 6, kSteps = 20;  // 20 batches of 8 rows per epoch and shard

// Dense BatchNorm ReLU Dense: BatchNorm's moving statistics move every step.
std::shared_ptr<nn::SequentialCell> bn_net(int64_t hidden = 8) {
  return std::make_shared<nn::SequentialCell>(
      std::vector<nn::CellPtr>{std::make_shared<nn::Dense>(kFeatures, hidden), std::make_shared<nn::BatchNorm2d>(hidden),
                               std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(hidden, 3)});
}

// kSteps * 8 rows per shard, shuffled anew each epoch, batches of 8.
dataset::Dataset bn_rows(int shards = 1, int shard = 0, uint64_t shuffle_seed = 5) {
  return dataset::Dataset::generator(
             [](int64_t i) {
               Tensor x({kFeatures});
               for (int64_t k = 0; k < kFeatures; ++k)
                 x.f32()[k] = normal_at(21, 0, static_cast<uint64_t>(i * kFeatures + k));
               const auto label = static_cast<int32_t>(uniform_at(21, 1, static_cast<uint64_t>(i)) * 3);
               return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
             },
             kSteps * 8 * shards, {"data", "label"}, shards, shard)
      .shuffle(shuffle_seed)
      .batch(8);
}

using MakeOpt = std::shared_ptr<nn::Optimizer> (*)(const ParameterList&);
std::shared_ptr<nn::Optimizer> adam(const ParameterList& p) { return std::make_shared<nn::Adam>(p, 0.01f); }
std::shared_ptr<nn::Optimizer> momentum(const ParameterList& p) { return std::make_shared<nn::Momentum>(p, 0.02f, 0.9f); }
std::shared_ptr<nn::Optimizer> sgd(const ParameterList& p) { return std::make_shared<nn::SGD>(p, 0.05f); }

// Captures the state once, when the run stands at `at` after a step.
struct CaptureAt : Callback {
  explicit CaptureAt(ResumePoint p) : at(p) {}
  ResumePoint at;
  std::optional<TrainingState> state;
  void on_step_end(const RunContext& ctx) override {
    if (!state && resume_point_of(ctx) == at) state = capture_training_state(ctx);
  }
};

// A run's outcome: every parameter's fingerprint (moving statistics included), its LossMonitor
// lines and losses, and the state captured on the way, if any.
struct Outcome {
  uint64_t print = 0;
  std::vector<std::string> lines;
  std::vector<float> losses;
  std::optional<TrainingState> state;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Trains `epochs` epochs from the start (seed 4), capturing the state at `at`.
Outcome uninterrupted(MakeOpt make_opt, int64_t epochs, ResumePoint at, int shards = 1, int shard = 0) {
  set_seed(4);
  auto net = bn_net();
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), make_opt(net->trainable_params()));
  std::ostringstream out;
  auto capture = std::make_shared<CaptureAt>(at);
  auto log = std::make_shared<StepLog>(ParameterList{});
  model.train(epochs, bn_rows(shards, shard), {std::make_shared<LossMonitor>(1, out), capture, log});
  return {fingerprint(net->get_parameters()), lines_of(out.str()), log->losses, capture->state};
}

// A new program: another seed, a new network, Model and dataset; restores `state` and trains to
// `epochs` from its point (or from `from`, when given).
Outcome resumed(MakeOpt make_opt, int64_t epochs, const TrainingState& state, int shards = 1, int shard = 0,
            std::optional<ResumePoint> from = std::nullopt) {
  set_seed(77);
  auto net = bn_net();
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(), make_opt(net->trainable_params()));
  const dataset::Dataset data = bn_rows(shards, shard);
  std::ostringstream out;
  auto log = std::make_shared<StepLog>(ParameterList{});
  const ResumePoint at = restore_training_state(model, data, state);
  model.train(epochs, data, {std::make_shared<LossMonitor>(1, out), log}, from.value_or(at));
  return {fingerprint(net->get_parameters()), lines_of(out.str()), log->losses, std::nullopt};
}

template <class T>
std::vector<T> tail(const std::vector<T>& v, size_t from) {
  return from <= v.size() ? std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(from), v.end()) : std::vector<T>{};
}

TEST(TrainingState, ResumingWithinAnEpochContinuesBitwiseEqualStandAlone) {
  for (MakeOpt make_opt : {adam, momentum, sgd}) {  // sgd: the update compiled into the graph
    const Outcome full = uninterrupted(make_opt, 2, {1, 17});
    ASSERT_TRUE(full.state.has_value());
    EXPECT_EQ(full.state->resume_point(), (ResumePoint{1, 17}));
    const Outcome rest = resumed(make_opt, 2, *full.state);
    EXPECT_EQ(rest.print, full.print) << "every parameter, moving statistics included";
    const size_t done = kSteps + 17;
    EXPECT_EQ(rest.losses, tail(full.losses, done));
    EXPECT_EQ(rest.lines, tail(full.lines, done));
    ASSERT_FALSE(rest.lines.empty());
    EXPECT_THAT(rest.lines.front(), ::testing::StartsWith("epoch: 2 step: 18, loss is "));
    // The oracle tells a resume one batch off.
    EXPECT_NE(resumed(make_opt, 2, *full.state, 1, 0, ResumePoint{1, 16}).print, full.print);
  }
  set_seed(0);
}

TEST(TrainingState, EveryPartOfTheStateIsNeeded) {
  const Outcome full = uninterrupted(adam, 2, {1, 17});
  ASSERT_TRUE(full.state.has_value());
  // Without the moving statistics (put back at their initial values) the parameters differ.
  TrainingState no_stats = *full.state;
  for (auto& [name, t] : no_stats.tensors)
    if (name.find("moving_mean") != std::string::npos) t = Tensor::zeros(t.shape());
  EXPECT_NE(resumed(adam, 2, no_stats).print, full.print);
  // Without Adam's step count its bias correction differs.
  TrainingState step_one = *full.state;
  step_one.scalars["global_step"] = 1;
  EXPECT_NE(resumed(adam, 2, step_one).print, full.print);
  // Without the moments the update differs.
  TrainingState no_moments = *full.state;
  for (auto& [name, t] : no_moments.tensors)
    if (name.rfind("moment1.", 0) == 0) t = Tensor::zeros(t.shape());
  EXPECT_NE(resumed(adam, 2, no_moments).print, full.print);
  set_seed(0);
}

TEST(TrainingState, ItHoldsEveryParameterTheOptimizerStateAndTheScalars) {
  const Outcome full = uninterrupted(adam, 2, {0, 3});
  ASSERT_TRUE(full.state.has_value());
  const TrainingState& s = *full.state;
  std::vector<std::string> names;
  for (const auto& [name, t] : s.tensors) names.push_back(name);
  for (const char* want : {"0.weight", "1.gamma", "1.moving_mean", "1.moving_variance", "moment1.0.weight",
                           "moment2.3.bias", "global_step"})
    EXPECT_THAT(names, ::testing::Contains(want));
  EXPECT_EQ(s.scalars["global_step"], 3);
  EXPECT_EQ(s.scalars["epoch"], 0);
  EXPECT_EQ(s.scalars["step_in_epoch"], 3);
  EXPECT_EQ(s.scalars["dataset"]["shuffle_seed"], 5);
  EXPECT_EQ(s.scalars["dataset"]["batches_per_epoch"], kSteps);
  EXPECT_EQ(s.scalars["rng"]["seed"], 4);
  EXPECT_EQ(s.scalars["optimizer"]["kind"], "adam");
  EXPECT_EQ(s.scalars["optimizer"]["hyper_parameters"]["learning_rate"], static_cast<double>(0.01f));
  EXPECT_EQ(s.scalars["ranks"], 1);
}

// The state is independent of any format: tensors through a checkpoint file and the scalars
// through JSON text restore to the same run.
TEST(TrainingState, ItSurvivesACheckpointFileAndJsonText) {
  const Outcome full = uninterrupted(momentum, 2, {0, 11});
  ASSERT_TRUE(full.state.has_value());
  const std::string path = ::testing::TempDir() + "/training_state_test.ckpt";
  save_checkpoint(full.state->tensors, path);
  TrainingState read;
  read.tensors = load_checkpoint(path);
  read.scalars = nlohmann::json::parse(full.state->scalars.dump());
  EXPECT_EQ(resumed(momentum, 2, read).print, full.print);
  set_seed(0);
}

// A capture at an epoch's last step, and at its end, continue at the next epoch's start.
TEST(TrainingState, APointAfterAnEpochsLastStepIsTheNextEpochsStart) {
  RunContext ctx;
  ctx.steps_per_epoch = 20;
  ctx.dataset_epoch = 1;
  ctx.step_in_epoch = 20;
  EXPECT_EQ(resume_point_of(ctx), (ResumePoint{2, 0}));
  ctx.step_in_epoch = 19;
  EXPECT_EQ(resume_point_of(ctx), (ResumePoint{1, 19}));
  const Outcome full = uninterrupted(momentum, 3, {1, 0});  // captured after epoch 1's last step
  ASSERT_TRUE(full.state.has_value());
  const Outcome rest = resumed(momentum, 3, *full.state);
  EXPECT_EQ(rest.print, full.print);
  EXPECT_EQ(rest.lines, tail(full.lines, kSteps));
  set_seed(0);
}

// Hooks other than on_step_end stand where the run stands too.
TEST(TrainingState, EveryHookSeesWhereTheRunStands) {
  struct Points : Callback {
    std::vector<std::pair<std::string, ResumePoint>> seen;
    void on_train_begin(const RunContext& c) override { seen.emplace_back("train_begin", resume_point_of(c)); }
    void on_epoch_begin(const RunContext& c) override { seen.emplace_back("epoch_begin", resume_point_of(c)); }
    void on_epoch_end(const RunContext& c) override { seen.emplace_back("epoch_end", resume_point_of(c)); }
    void on_train_end(const RunContext& c) override { seen.emplace_back("train_end", resume_point_of(c)); }
  };
  set_seed(4);
  auto net = bn_net();
  Model model(*net, nn::CrossEntropyLoss(), nn::Momentum(net->trainable_params(), 0.02f, 0.9f));
  auto points = std::make_shared<Points>();
  model.train(3, bn_rows(), {points}, ResumePoint{1, 7});
  using P = std::pair<std::string, ResumePoint>;
  EXPECT_EQ(points->seen, (std::vector<P>{{"train_begin", {1, 7}},
                                          {"epoch_begin", {1, 7}},
                                          {"epoch_end", {2, 0}},
                                          {"epoch_begin", {2, 0}},
                                          {"epoch_end", {3, 0}},
                                          {"train_end", {3, 0}}}));
  // train(1) then train(1): the second call walks dataset epoch 1, which its points name.
  const dataset::Dataset data = bn_rows();
  auto capture = std::make_shared<CaptureAt>(ResumePoint{1, 3});
  model.train(1, data);
  model.train(1, data, {capture});
  EXPECT_TRUE(capture->state.has_value());
  set_seed(0);
}

TEST(TrainingState, DataParallelResumingWithinAnEpochContinuesBitwiseEqual) {
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
  for (MakeOpt make_opt : {adam, momentum, sgd}) {
    std::vector<Outcome> full(2), rest(2);
    run_world(2, Wire::kInproc, [&](int rank) { full[rank] = uninterrupted(make_opt, 2, {1, 17}, 2, rank); });
    run_world(2, Wire::kInproc, [&](int rank) {
      ASSERT_TRUE(full[rank].state.has_value());
      rest[rank] = resumed(make_opt, 2, *full[rank].state, 2, rank);
    });
    for (int rank = 0; rank < 2; ++rank) {
      SCOPED_TRACE(rank);
      EXPECT_EQ(full[rank].state->scalars["rank"], rank);
      EXPECT_EQ(full[rank].state->scalars["ranks"], 2);
      EXPECT_EQ(rest[rank].print, full[rank].print);
      EXPECT_EQ(rest[rank].losses, tail(full[rank].losses, kSteps + 17));
      EXPECT_EQ(rest[rank].lines, tail(full[rank].lines, kSteps + 17));
    }
    // Each rank's moving statistics come from its own shard's batches: the states differ.
    EXPECT_NE(full[0].print, full[1].print);
  }
  set_seed(0);
}

// ---- refusals: one line naming the item, and nothing changed ----

struct Target {
  std::shared_ptr<nn::SequentialCell> net;
  std::unique_ptr<Model> model;
};
Target target(MakeOpt make_opt, int64_t hidden = 8) {
  set_seed(77);
  Target t{bn_net(hidden), nullptr};
  t.model = std::make_unique<Model>(*t.net, std::make_shared<nn::CrossEntropyLoss>(), make_opt(t.net->trainable_params()));
  return t;
}

// Expects restore to throw E with `what` in its message and to leave the target as it was.
template <class E>
void expect_refused(Target& t, const dataset::Dataset& data, const TrainingState& s, const std::string& what) {
  const uint64_t before = fingerprint(t.net->get_parameters());
  EXPECT_THAT([&] { restore_training_state(*t.model, data, s, "state 'run/7'"); },
              ThrowsMessage<E>(::testing::AllOf(HasSubstr("state 'run/7'"), HasSubstr(what))));
  EXPECT_EQ(fingerprint(t.net->get_parameters()), before);
  EXPECT_EQ(t.model->optimizer().global_step(), 0);
}

TEST(TrainingState, RestoresFromAnotherOptimizerDatasetOrNetworkAreRefused) {
  const Outcome full = uninterrupted(adam, 1, {0, 5});
  ASSERT_TRUE(full.state.has_value());
  const TrainingState& s = *full.state;
  {
    Target t = target(momentum);
    expect_refused<InvalidArgument>(t, bn_rows(), s, "saved with optimizer 'adam', this model's is 'momentum'");
  }
  {
    Target t = target([](const ParameterList& p) -> std::shared_ptr<nn::Optimizer> {
      return std::make_shared<nn::Adam>(p, 0.02f);
    });
    expect_refused<InvalidArgument>(t, bn_rows(), s, "optimizer hyper-parameter 'learning_rate' is 0.0");
  }
  {
    Target t = target(adam);
    expect_refused<InvalidArgument>(t, bn_rows(1, 0, 6), s, "the dataset's shuffle seed is 5 in the state and 6 here");
    expect_refused<InvalidArgument>(t, bn_rows(2, 1), s, "the dataset's shard count (num_shards) is 1 in the state and 2 here");
  }
  {
    Target t = target(adam, 16);  // another hidden width: every shape differs
    expect_refused<ShapeError>(t, bn_rows(), s, "of another shape or dtype than the network's parameter");
  }
  {
    // The network matches but an optimizer state tensor does not: the parameters written come back.
    Target t = target(adam);
    TrainingState bad_moment = s;
    for (auto& [name, v] : bad_moment.tensors)
      if (name == "moment2.3.bias") v = Tensor({4});
    expect_refused<ShapeError>(t, bn_rows(), bad_moment, "optimizer state 'moment2.3.bias' is f32(4,), this optimizer's is f32(3,)");
  }
  {
    Target t = target(adam);
    TrainingState extra = s;
    extra.tensors.emplace_back("head.weight", Tensor({2, 2}));
    expect_refused<InvalidArgument>(t, bn_rows(), extra, "1 tensor that name no parameter or optimizer state");
    TrainingState no_stats = s;
    std::erase_if(no_stats.tensors, [](const auto& e) { return e.first == "1.moving_variance"; });
    expect_refused<InvalidArgument>(t, bn_rows(), no_stats, "lacks 1 of the network's 8 parameters: 1.moving_variance");
    TrainingState no_moment = s;
    std::erase_if(no_moment.tensors, [](const auto& e) { return e.first == "moment2.0.bias"; });
    expect_refused<InvalidArgument>(t, bn_rows(), no_moment, "has no optimizer state 'moment2.0.bias'");
    TrainingState bad = s;
    bad.scalars["dataset"].erase("batch_size");
    expect_refused<InvalidArgument>(t, bn_rows(), bad, "scalar 'dataset.batch_size' is missing");
    bad = s;
    bad.scalars["step_in_epoch"] = "seventeen";
    expect_refused<InvalidArgument>(t, bn_rows(), bad, "scalar 'step_in_epoch' is \"seventeen\"");
  }
  EXPECT_THAT([] { capture_training_state(RunContext{}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("capture from a callback of Model::train")));
  set_seed(0);
}

TEST(TrainingState, AResumePointOutsideTheRunIsRefusedBeforeAnyStep) {
  Target t = target(momentum);
  const dataset::Dataset data = bn_rows();
  EXPECT_THAT([&] { t.model->train(2, data, {}, ResumePoint{1, kSteps}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("the resume point's step must be in [0, steps per epoch) = "
                                                       "[0, 20), got 20")));
  EXPECT_THAT([&] { t.model->train(2, data, {}, ResumePoint{2, 0}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("the resume point's epoch must be in [0, epochs) = [0, 2), got 2")));
  EXPECT_THAT([&] { t.model->train(2, data, {}, ResumePoint{0, -1}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("got -1")));
  EXPECT_EQ(t.model->optimizer().global_step(), 0);
  EXPECT_EQ(data.epoch(), 0);
  set_seed(0);
}

}  // namespace training_state_test
}  // namespace
}  // namespace sf::traintest
