// Tests for load_param_into_net (train/load_param_into_net.h) and load_into's messages
// (train/checkpoint.h): a ModelCheckpoint-style file loads into a fresh network bitwise, the
// optimizer state reported as not loaded; missing, mis-shaped and unexpected tensors are named
// with the file and what it holds, long lists cut; a refused load changes nothing.
#include <shardflow/train/load_param_into_net.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>
#include "tests/train/toy_data.h"

namespace sf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using traintest::kClasses;
using traintest::kIn;

std::string temp_file(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return (std::filesystem::path(::testing::TempDir()) / (std::string("sf_lpin_") + info->name() + "_" + tag + ".ckpt"))
      .string();
}

// A trained Mlp(kIn, {8}, kClasses) with Momentum: its checkpoint file holds the 4 parameters,
// their 4 moments and global_step.
struct Trained {
  Trained() {
    set_seed(1);
    net = std::make_unique<nn::Mlp>(kIn, std::vector<int64_t>{8}, kClasses);
    model = std::make_unique<Model>(*net, nn::CrossEntropyLoss(), nn::Momentum(net->trainable_params(), 0.1f, 0.9f));
    model->train(1, traintest::random_rows(16, 2).batch(8));
    set_seed(0);
  }
  std::unique_ptr<nn::Mlp> net;
  std::unique_ptr<Model> model;
};

std::vector<Tensor> values(nn::Cell& net) {
  std::vector<Tensor> out;
  for (const Parameter& p : net.get_parameters()) out.push_back(p.value().clone());
  return out;
}

TEST(LoadParamIntoNet, LoadsACheckpointFileIntoAFreshNetworkBitwise) {
  Trained t;
  const std::string path = temp_file("run");
  save_checkpoint(checkpoint_entries(t.model->optimizer()), path);
  set_seed(42);
  nn::Mlp fresh(kIn, {8}, kClasses);
  set_seed(0);
  ASSERT_FALSE(bitwise_equal(fresh.get_parameters()[0].value(), t.net->get_parameters()[0].value()));
  const LoadReport r = load_param_into_net(fresh, path);
  EXPECT_TRUE(r.param_not_load.empty());
  EXPECT_THAT(r.ckpt_not_load, ElementsAre("moments.fc1_weight", "moments.fc1_bias", "moments.fc2_weight",
                                           "moments.fc2_bias", "global_step"));
  const std::vector<Tensor> want = values(*t.net), got = values(fresh);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << i;
}

TEST(LoadParamIntoNet, AMissingParameterIsRefusedNamingTheFileAndWhatItHolds) {
  Trained t;
  NamedTensors without_bias;
  for (const auto& e : checkpoint_entries(t.model->optimizer()))
    if (e.first != "fc2_bias") without_bias.push_back(e);
  const std::string path = temp_file("nobias");
  save_checkpoint(without_bias, path);
  nn::Mlp fresh(kIn, {8}, kClasses);
  const std::vector<Tensor> before = values(fresh);
  EXPECT_THAT([&] { load_param_into_net(fresh, path); },
              ThrowsMessage<InvalidArgument>(HasSubstr(
                  "load_param_into_net: checkpoint '" + path + "' lacks 1 of the network's 4 parameters: fc2_bias (it "
                  "holds 8 tensors: fc1_weight, fc1_bias, fc2_weight, moments.fc1_weight, moments.fc1_bias, "
                  "moments.fc2_weight, ... 2 more); pass strict = false to load the others")));
  const std::vector<Tensor> after_refusal = values(fresh);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(bitwise_equal(after_refusal[i], before[i])) << i;

  // Not strict: the others load, the missing one keeps its value and is reported.
  const LoadReport r = load_param_into_net(fresh, path, /*strict=*/false);
  EXPECT_THAT(r.param_not_load, ElementsAre("fc2_bias"));
  const std::vector<Tensor> want = values(*t.net), got = values(fresh);
  EXPECT_TRUE(bitwise_equal(got[0], want[0]));
  EXPECT_TRUE(bitwise_equal(got[3], before[3])) << "fc2_bias kept";
}

TEST(LoadParamIntoNet, MisshapedTensorsAreRefusedByNameAndNothingChanges) {
  Trained t;
  nn::Mlp wider(kIn, {8, 8}, kClasses);  // fc2 is (8, 8) here, (8, 3) in the checkpoint; fc3 is missing
  const std::vector<Tensor> before = values(wider);
  EXPECT_THAT([&] { load_param_into_net(wider, checkpoint_entries(t.model->optimizer()), false); },
              ThrowsMessage<ShapeError>(HasSubstr("the checkpoint has 2 tensors of another shape or dtype than the "
                                                  "network's parameter: fc2_weight: checkpoint f32(8, 3), network f32(8, 8), fc2_bias")));
  const std::vector<Tensor> after = values(wider);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(bitwise_equal(after[i], before[i])) << i;
}

TEST(LoadParamIntoNet, LongListsAreCutToOneBoundedLine) {
  NamedTensors many;
  for (int i = 0; i < 5000; ++i) many.emplace_back(fmt::format("t{}", i), Tensor({1}));
  nn::Mlp net(kIn, {8}, kClasses);
  try {
    load_param_into_net(net, many);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_LE(m.size(), kMaxErrorChars);
    EXPECT_EQ(m.find('\n'), std::string::npos);
    EXPECT_THAT(m, HasSubstr("it holds 5000 tensors: t0, t1, t2, t3, t4, t5, ... 4994 more"));
  }
}

TEST(LoadInto, AnotherNetworksCheckpointIsNamedWithWhatItHolds) {
  const std::string path = temp_file("other");
  save_checkpoint({{"conv1.weight", Tensor({2, 2})}, {"global_step", Tensor::from_vector({}, std::vector<int32_t>{3})}},
                  path);
  Trained t;
  EXPECT_THAT([&] { load_into(t.model->optimizer(), path); },
              ThrowsMessage<InvalidArgument>(::testing::StrEq(
                  "checkpoint '" + path + "' has no tensor 'fc1_weight' (it holds 2 tensors: conv1.weight, global_step)")));
  // Mis-shaped: nothing is written, not even the tensors checked before it.
  NamedTensors entries = checkpoint_entries(t.model->optimizer());
  const Tensor first = entries[0].second.clone();
  for (auto& [name, v] : entries) v = v.clone();
  entries[0].second.f32()[0] += 1.0f;
  entries[3].second = Tensor({7});
  EXPECT_THAT([&] { load_into(t.model->optimizer(), entries, "checkpoint 'x.ckpt'"); },
              ThrowsMessage<ShapeError>(HasSubstr("checkpoint 'x.ckpt': tensor 'fc2_bias' is")));
  EXPECT_TRUE(bitwise_equal(t.model->optimizer().parameters()[0].value(), first));
}

// MindSpore's Model(net): a checkpoint evaluated without an optimizer gives the trained model's
// accuracy; such a model refuses to train.
TEST(LoadParamIntoNet, AnEvaluationOnlyModelEvaluatesTheLoadedParameters) {
  Trained t;
  const std::string path = temp_file("eval");
  save_checkpoint(checkpoint_entries(t.model->optimizer()), path);
  const dataset::Dataset eval_set = traintest::random_rows(64, 5).batch(16);
  nn::Mlp fresh(kIn, {8}, kClasses);
  load_param_into_net(fresh, path);
  Model eval_only(fresh);
  EXPECT_EQ(eval_only.eval_accuracy(eval_set), t.model->eval_accuracy(eval_set));
  EXPECT_THAT([&] { eval_only.train(1, eval_set); },
              ThrowsMessage<InvalidArgument>(HasSubstr("built for evaluation only")));
}

}  // namespace
}  // namespace sf
