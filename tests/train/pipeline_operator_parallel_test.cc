// Operator parallel inside pipeline stages (DP × PP × TP) against 1 device: an MLP of four
// MatMul layers cut into 2 and 4 stages, each stage's ops split over its devices by Layout
// strategies (column-parallel then row-parallel MatMuls, Megatron's pairing, with the batch over
// a "dp" axis), under every schedule on 8 virtual devices. Loss per step within 1e-5 relative
// of the same model run micro-batch by micro-batch on one device, and every rank agrees.
#include <gtest/gtest.h>

#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"
#include "tests/train/pipeline_tp_mlp.h"
#include <shardflow/train/model.h>
#include <shardflow/train/pipeline_cell.h>

namespace sf::traintest {
namespace {

constexpr int kSteps = 12;

struct Case {
  const char* scheduler;
  int stages, interleave, dp, tp;
};

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return fmt::format("{}_p{}_v{}_dp{}_tp{}", c.scheduler, c.stages, c.interleave, c.dp, c.tp);
}

class PipelineOperatorParallel : public testing::TestWithParam<Case> {};

TEST_P(PipelineOperatorParallel, LossPerStepEqualsOneDevice) {
  const Case c = GetParam();
  const int micro = 2 * c.stages;
  const int64_t batch = 4 * micro * c.dp;
  const int virtual_stages = c.stages * c.interleave;
  ASSERT_EQ(kLayers % virtual_stages, 0);
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kSemiAutoParallel,
                              .gradients_mean = true,
                              .dataset_strategy = "full_batch",
                              .pipeline_stages = c.stages,
                              .pipeline_scheduler = c.scheduler,
                              .pipeline_interleave = c.interleave});
  const int devices = c.stages * c.dp * c.tp;
  std::vector<std::vector<float>> losses(devices);
  set_seed(5);
  run_world(devices, Wire::kInproc, [&](int rank) {
    std::vector<std::shared_ptr<Layer>> layers;
    auto net = mlp(layers);
    for (int i = 0; i < kLayers; ++i) layers[i]->set_pipeline_stage(i * virtual_stages / kLayers);
    shard_layers(layers, c.dp, c.tp);
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), micro);
    Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
    auto log = std::make_shared<StepLog>(ParameterList{});
    model.train(1, pipe_rows(batch * kSteps).batch(batch), {log});
    losses[rank] = log->losses;
  });
  for (int r = 1; r < devices; ++r) EXPECT_EQ(losses[r], losses[0]) << "rank " << r;

  set_seed(5);
  std::vector<std::shared_ptr<Layer>> layers;
  auto net = mlp(layers);
  const std::vector<float> want =
      one_device_pipeline_losses(*net, pipe_rows(batch * kSteps).batch(batch), micro, kSteps);
  ASSERT_EQ(losses[0].size(), static_cast<size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s)
    EXPECT_NEAR(losses[0][s], want[s], 1e-5 * std::abs(want[s])) << "step " << s + 1;
  EXPECT_LT(want.back(), want.front());  // it trains: the comparison is not of constants
}

INSTANTIATE_TEST_SUITE_P(
    EightDevices, PipelineOperatorParallel,
    testing::Values(Case{"gpipe", 2, 1, 2, 2}, Case{"1f1b", 2, 1, 2, 2}, Case{"zb_h1", 2, 1, 2, 2},
                    Case{"interleaved_1f1b", 2, 2, 2, 2}, Case{"1f1b", 2, 1, 1, 4}, Case{"gpipe", 2, 1, 1, 4},
                    Case{"zb_h1", 2, 1, 1, 4}, Case{"interleaved_1f1b", 2, 2, 1, 4}, Case{"1f1b", 4, 1, 1, 2},
                    Case{"zb_h1", 4, 1, 1, 2}, Case{"1f1b", 2, 1, 1, 3}),
    case_name);

}  // namespace
}  // namespace sf::traintest
