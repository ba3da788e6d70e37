// LoopCheckpoint (train/loop_checkpoint.h): a hand-written value_and_grad loop of 60 steps over
// 3 epochs saving every 30, and a new program (another seed, network, optimizer and dataset)
// resumed from step 30 for the 30 steps left, end bitwise equal with the same losses; a
// Model::train run resumes the loop's checkpoint; a pipeline model is refused (the semi-auto
// loop is operator_parallel's, resumed by tests/examples).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/layers.h>
#include <shardflow/train/loop_checkpoint.h>
#include <shardflow/train/model.h>
#include <shardflow/train/pipeline_cell.h>
#include <shardflow/train/resume_from.h>
#include <shardflow/train/value_and_grad.h>
#include "tests/train/checkpoint_dir_util.h"
#include "tests/train/parallel_fixture.h"

namespace sf::traintest {
namespace {

using ::testing::HasSubstr;
using ckpttest::fresh_dir;
using ckpttest::message_of;

constexpr int64_t kFeatures = 5, kBatches = 20, kEpochs = 3;  // 60 steps

std::shared_ptr<nn::SequentialCell> make_net() {
  return std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(kFeatures, 8), std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(8, 3)});
}

// kBatches batches of 4 rows, shuffled anew each epoch.
dataset::Dataset make_data() {
  return dataset::Dataset::generator(
             [](int64_t i) {
               Tensor x({kFeatures});
               for (int64_t k = 0; k < kFeatures; ++k)
                 x.f32()[k] = normal_at(31, 0, static_cast<uint64_t>(i * kFeatures + k));
               const auto label = static_cast<int32_t>(uniform_at(31, 1, static_cast<uint64_t>(i)) * 3);
               return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{label})};
             },
             kBatches * 4, {"data", "label"})
      .shuffle(9)
      .batch(4);
}

struct Outcome {
  std::vector<float> losses;  // of the steps this run took
  std::vector<Tensor> values;  // the parameters after the last step
};

// The loop, from the start (seed 4) saving to `dir` every 30 steps, or (seed 77) resumed.
Outcome loop(const std::string& dir, const std::string& resume) {
  set_seed(resume.empty() ? 4 : 77);
  auto net = make_net();
  auto loss_fn = std::make_shared<nn::CrossEntropyLoss>();
  auto optimizer = std::make_shared<nn::Adam>(net->trainable_params(), 0.01f);
  const dataset::Dataset data = make_data();
  auto grad_fn = value_and_grad(
      [&](GraphBuilder& b, const std::vector<Value>& in) { return (*loss_fn)(b, (*net)(b, in[0]), in[1]); },
      net->trainable_params());
  Model model(*net, loss_fn, optimizer);
  LoopCheckpoint ckpt(model, data, {.dir = dir, .save_every = 30});
  const ResumePoint from = ckpt.begin(resume);
  Outcome out;
  for (int64_t epoch = from.epoch; epoch < kEpochs; ++epoch) {
    int64_t i = epoch == from.epoch ? from.step : 0;
    dataset::BatchIterator it = data.iterator(epoch);
    it.skip(i);
    while (const std::vector<Tensor>* batch = it.next()) {
      auto [loss, grads] = grad_fn({(*batch)[0], (*batch)[1]});
      optimizer->step(grads);
      out.losses.push_back(loss);
      ckpt.step_end(epoch, ++i);
    }
  }
  ckpt.end();
  for (const Parameter& p : net->trainable_params()) out.values.push_back(p.value().clone());
  return out;
}

TEST(LoopCheckpoint, ResumedLoopEndsBitwiseEqual) {
  const std::string dir = fresh_dir();
  const Outcome full = loop(dir + "/run", "");
  ASSERT_EQ(full.losses.size(), 60u);
  EXPECT_TRUE(std::filesystem::exists(dir + "/run/step_30/manifest.json"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/run/step_60/manifest.json"));
  const Outcome resumed = loop("", dir + "/run/step_30");
  ASSERT_EQ(resumed.losses.size(), 30u);
  EXPECT_EQ(resumed.losses, std::vector<float>(full.losses.begin() + 30, full.losses.end()));
  ASSERT_EQ(resumed.values.size(), full.values.size());
  for (size_t i = 0; i < full.values.size(); ++i)
    EXPECT_TRUE(bitwise_equal(resumed.values[i], full.values[i])) << "parameter " << i;
}

TEST(LoopCheckpoint, ModelTrainResumesTheLoopsCheckpoint) {
  const std::string dir = fresh_dir();
  const Outcome full = loop(dir + "/run", "");
  set_seed(77);
  auto net = make_net();
  Model model(*net, std::make_shared<nn::CrossEntropyLoss>(),
              std::make_shared<nn::Adam>(net->trainable_params(), 0.01f));
  const dataset::Dataset data = make_data();
  const ResumePoint from = resume_from(model, data, dir + "/run/step_30");
  EXPECT_EQ(from, (ResumePoint{1, 10}));
  EXPECT_EQ(model.optimizer().global_step(), 30);
  model.train(kEpochs, data, {}, from);
  // Model::train's step is another program than the loop's: the same within float rounding.
  const ParameterList params = net->trainable_params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& got = params[i].value();
    for (int64_t k = 0; k < got.numel(); ++k)
      EXPECT_NEAR(got.f32()[k], full.values[i].f32()[k], 1e-4f) << "parameter " << i << " element " << k;
  }
}

TEST(LoopCheckpoint, RefusedForAPipelineModel) {
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kSemiAutoParallel, .dataset_strategy = "full_batch",
                              .pipeline_stages = 1});
  const std::string dir = fresh_dir();
  std::string message;
  run_world(1, Wire::kInproc, [&](int) {
    auto net = make_net();
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 2);
    Model model(pipe, nn::SGD(net->trainable_params(), 0.1f));
    const dataset::Dataset data = make_data();
    message = message_of<InvalidArgument>([&] { LoopCheckpoint(model, data, {.dir = dir}); });
  });
  EXPECT_THAT(message, HasSubstr("LoopCheckpoint: a hand-written loop does not checkpoint in pipeline parallel (train "
                                 "with Model::train and CheckpointDir there)"));
}

}  // namespace
}  // namespace sf::traintest
