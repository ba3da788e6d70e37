// Tests for Model::train's epoch numbering (train/model.h): `epochs` is the total and
// `initial_epoch` the epoch to start at, as MindSpore's; the dataset's epoch counter continues
// across calls. Oracle: train(1) then train(1) gives bit-identical parameters to train(2) on a
// shuffled dataset, and a run resumed at epoch 1 from the epoch-1 state equals the
// uninterrupted one — stand-alone, data parallel, semi-auto and pipeline parallel (the ranks of
// the last two sharing one dataset object).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/train/checkpoint.h>
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>
#include <shardflow/train/pipeline_cell.h>
#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"
#include "tests/train/toy_data.h"

namespace sf::traintest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// Records the epoch number and loss of every step.
struct EpochLog : Callback {
  std::vector<int64_t> epochs;
  std::vector<float> losses;
  int64_t begin_epoch = -1;
  void on_train_begin(const RunContext& ctx) override { begin_epoch = ctx.epoch; }
  void on_step_end(const RunContext& ctx) override {
    epochs.push_back(ctx.epoch);
    losses.push_back(ctx.loss);
  }
};

// How a run is split into train() calls: {epochs, initial_epoch} each, on one Model; a resume
// (a new network and Model restored from the state after the previous calls) before each call
// marked `resume`.
struct Call {
  int64_t epochs, initial_epoch;
  bool resume = false;
};

// Trains a fresh Mlp (seed 4) by `calls`; returns the final parameters' fingerprint and the
// epoch log. `make_data` gives the dataset (called once, or once per resume: a restarted
// program builds its dataset anew).
struct RunResult {
  uint64_t print;
  std::vector<int64_t> epochs;
  std::vector<float> losses;
};
RunResult run_calls(const std::vector<Call>& calls, const std::function<dataset::Dataset()>& make_data,
                    const std::function<std::shared_ptr<nn::Optimizer>(const ParameterList&)>& make_opt) {
  set_seed(4);
  auto net = std::make_unique<nn::Mlp>(kIn, std::vector<int64_t>{8}, kClasses);
  auto model = std::make_unique<Model>(*net, std::make_shared<nn::CrossEntropyLoss>(), make_opt(net->trainable_params()));
  dataset::Dataset data = make_data();
  auto log = std::make_shared<EpochLog>();
  for (const Call& c : calls) {
    if (c.resume) {
      const NamedTensors state = checkpoint_entries(model->optimizer());
      set_seed(77);  // another initialisation: everything must come from the state
      auto fresh = std::make_unique<nn::Mlp>(kIn, std::vector<int64_t>{8}, kClasses);
      auto fresh_model =
          std::make_unique<Model>(*fresh, std::make_shared<nn::CrossEntropyLoss>(), make_opt(fresh->trainable_params()));
      load_into(fresh_model->optimizer(), state);
      model = std::move(fresh_model);
      net = std::move(fresh);
      data = make_data();
    }
    model->train(c.epochs, data, {log}, c.initial_epoch);
  }
  set_seed(0);
  return {fingerprint(net->trainable_params()), log->epochs, log->losses};
}

dataset::Dataset shuffled_rows() { return random_rows(40, 9).shuffle(5).batch(8); }  // 5 steps an epoch

std::shared_ptr<nn::Optimizer> sgd(const ParameterList& p) { return std::make_shared<nn::SGD>(p, 0.1f); }
std::shared_ptr<nn::Optimizer> momentum(const ParameterList& p) { return std::make_shared<nn::Momentum>(p, 0.1f, 0.9f); }

TEST(ModelEpochs, TrainOneThenOneEqualsTrainTwoOnAShuffledDataset) {
  for (auto make_opt : {sgd, momentum}) {  // the in-graph SGD step and the fetched-gradient one
    const RunResult two = run_calls({{2, 0}}, shuffled_rows, make_opt);
    const RunResult one_one = run_calls({{1, 0}, {1, 0}}, shuffled_rows, make_opt);
    EXPECT_EQ(one_one.print, two.print);
    EXPECT_EQ(one_one.losses, two.losses);
    // MindSpore numbers each call's epochs from its initial_epoch: 1, then 1 again.
    EXPECT_EQ(one_one.epochs, (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
    EXPECT_EQ(two.epochs, (std::vector<int64_t>{1, 1, 1, 1, 1, 2, 2, 2, 2, 2}));
  }
}

TEST(ModelEpochs, ResumingAtInitialEpochEqualsTheUninterruptedRun) {
  for (auto make_opt : {sgd, momentum}) {
    const RunResult three = run_calls({{3, 0}}, shuffled_rows, make_opt);
    // Epoch 1, then a new program restores the state and its new dataset is positioned at 1.
    const RunResult resumed = run_calls({{1, 0}, {3, 1, true}}, shuffled_rows, make_opt);
    EXPECT_EQ(resumed.print, three.print);
    EXPECT_EQ(resumed.losses, three.losses);
    EXPECT_EQ(resumed.epochs, three.epochs) << "the callbacks see epochs 2 and 3 after the resume";
  }
  // Without initial_epoch the new dataset would start at epoch 0: a different model.
  const RunResult three = run_calls({{3, 0}}, shuffled_rows, sgd);
  EXPECT_NE(run_calls({{1, 0}, {2, 0, true}}, shuffled_rows, sgd).print, three.print);
}

TEST(ModelEpochs, LossMonitorAndCallbacksSeeTheResumedEpochNumbers) {
  set_seed(4);
  nn::Mlp net(kIn, {8}, kClasses);
  Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
  std::ostringstream out;
  auto log = std::make_shared<EpochLog>();
  model.train(3, random_rows(16, 2).batch(8), {std::make_shared<LossMonitor>(2, out), log}, 2);
  set_seed(0);
  EXPECT_EQ(log->begin_epoch, 2);
  EXPECT_THAT(log->epochs, ElementsAre(3, 3));
  EXPECT_THAT(out.str(), ::testing::StartsWith("epoch: 3 step: 2, loss is "));
}

TEST(ModelEpochs, InitialEpochOutsideTheEpochsIsRefused) {
  nn::Mlp net(kIn, {8}, kClasses);
  Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
  const dataset::Dataset ds = random_rows(16, 2).batch(8);
  for (int64_t bad : {int64_t{2}, int64_t{5}, int64_t{-1}})
    EXPECT_THAT([&] { model.train(2, ds, {}, bad); },
                ThrowsMessage<InvalidArgument>(HasSubstr("initial_epoch must be in [0, epochs) = [0, 2)")));
  EXPECT_EQ(ds.epoch(), 0) << "a refused call walks nothing";
}

// Data parallel over 2 ranks: each rank's (sharded) dataset counts its epochs.
TEST(ModelEpochs, DataParallelTrainOneThenOneEqualsTrainTwo) {
  ParallelContextGuard ctx({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
  auto run = [](const std::vector<int64_t>& calls) {
    std::vector<uint64_t> prints(2);
    run_world(2, Wire::kInproc, [&](int rank) {
      set_seed(4);
      nn::Mlp net(784, {8}, 10);
      Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.05f));
      const dataset::Dataset ds = image_rows(48, 2, rank).shuffle(3).batch(8);
      for (int64_t e : calls) model.train(e, ds);
      prints[rank] = fingerprint(net.trainable_params());
    });
    set_seed(0);
    EXPECT_EQ(prints[0], prints[1]);
    return prints[0];
  };
  EXPECT_EQ(run({1, 1}), run({2}));
}

// Pipeline parallel (2 stages) with one dataset object shared by both rank threads: each rank
// keeps its own epoch count in it.
TEST(ModelEpochs, PipelineRanksSharingOneDatasetEachContinueTheirEpochs) {
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kSemiAutoParallel, .gradients_mean = true,
                              .dataset_strategy = "full_batch", .pipeline_stages = 2});
  auto run = [](const std::vector<int64_t>& calls) {
    const dataset::Dataset shared = pipe_rows(24).shuffle(8).batch(8);
    std::vector<std::vector<float>> losses(2);
    run_world(2, Wire::kInproc, [&](int rank) {
      set_seed(6);
      auto net = pipe_net(4, {0, 0, 1, 1});
      nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 2);
      Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
      auto log = std::make_shared<StepLog>(ParameterList{});
      for (int64_t e : calls) model.train(e, shared, {log});
      losses[rank] = log->losses;
    });
    set_seed(0);
    EXPECT_EQ(losses[0], losses[1]);
    EXPECT_EQ(shared.epoch(0), 2);
    EXPECT_EQ(shared.epoch(1), 2);
    return losses[0];
  };
  EXPECT_EQ(run({1, 1}), run({2}));
}

// Semi-auto parallel: every rank reads the same (shared) dataset.
TEST(ModelEpochs, SemiAutoTrainOneThenOneEqualsTrainTwo) {
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kSemiAutoParallel});
  auto run = [](const std::vector<int64_t>& calls) {
    const dataset::Dataset shared = random_rows(32, 9).shuffle(2).batch(8);
    std::vector<std::vector<float>> losses(2);
    run_world(2, Wire::kInproc, [&](int rank) {
      set_seed(4);
      nn::Mlp net(kIn, {8}, kClasses);
      Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
      auto log = std::make_shared<StepLog>(ParameterList{});
      for (int64_t e : calls) model.train(e, shared, {log});
      losses[rank] = log->losses;
    });
    set_seed(0);
    EXPECT_EQ(losses[0], losses[1]);
    return losses[0];
  };
  const std::vector<float> two = run({2});
  EXPECT_EQ(two.size(), 8u);
  EXPECT_EQ(run({1, 1}), two);
}

}  // namespace
}  // namespace sf::traintest
