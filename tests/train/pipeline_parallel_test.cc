// Pipeline parallel against 1 device: 2 and 4 stages under every schedule, interleaved chunks,
// a pipeline × data-parallel grid — 20 steps each, loss per step within 1e-5 relative of the
// same model run micro-batch by micro-batch on one device. Then each bad configuration refused
// with its own message before any rank communicates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"
#include <shardflow/train/model.h>
#include <shardflow/train/pipeline_cell.h>

// Its own namespace: the test files are compiled several to a unit.
namespace sf::traintest {
namespace {
namespace pipeline_parallel_test {

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

}  // namespace pipeline_parallel_test
}  // namespace
}  // namespace sf::traintest

namespace sf::traintest {
namespace {
namespace pipeline_parallel_test {

// x -> stage 0 -> stage 1 -> stage 2, plus a residual from stage 0's output to the end (relayed
// through stage 1), and one weight W read on stages 0 and 1 (add_pipeline_stage(1)).
class TiedNet : public nn::Cell {
 public:
  explicit TiedNet(bool add_stage = true) {
    w_ = register_parameter("w", {24, 24}, "dense_weight");
    in_ = register_cell("in", std::make_shared<nn::Dense>(kPipeFeatures, 24));
    mid_ = register_cell("mid", std::make_shared<nn::Dense>(24, 24));
    out_ = register_cell("out", std::make_shared<nn::Dense>(24, 10));
    in_->set_pipeline_stage(0);
    mid_->set_pipeline_stage(1);
    out_->set_pipeline_stage(2);
    if (add_stage) w_.add_pipeline_stage(1);
  }
  Value construct(GraphBuilder& b, Value x) override {
    Value h0 = b.relu(b.matmul((*in_)(b, x), param(b, w_), false, true));  // stage 0 (in's caller: inferred)
    Value h1 = b.relu((*mid_)(b, h0));
    Value h2 = b.add(h1, h0);                                               // stage 1 reads h0
    Value h3 = b.matmul(h2, param(b, w_), false, true);
    return b.add((*out_)(b, h3), (*out_)(b, h0));                          // stage 2 reads h0: relayed
  }

 private:
  Parameter w_;
  std::shared_ptr<nn::Dense> in_, mid_, out_;
};

TEST(PipelineParallel, SharedParameterAndARelayedResidualEqualOneDevice) {
  const int64_t batch = 12;
  const int micro = 3;
  ParallelContextGuard guard({.parallel_mode = ParallelMode::kSemiAutoParallel, .gradients_mean = true,
                              .dataset_strategy = "full_batch", .pipeline_stages = 3});
  set_seed(3);
  std::vector<std::vector<float>> got(3);
  run_world(3, Wire::kInproc, [&](int rank) {
    TiedNet net;
    nn::PipelineCell pipe(nn::WithLossCell(net, nn::CrossEntropyLoss()), micro);
    Model model(pipe, nn::Momentum(net.infer_param_pipeline_stage(), 0.02f, 0.9f));
    auto log = std::make_shared<StepLog>(ParameterList{});
    model.train(1, pipe_rows(batch * kSteps).batch(batch), {log});
    got[rank] = log->losses;
  });
  set_seed(3);
  TiedNet reference;
  const auto want = one_device_pipeline_losses(reference, pipe_rows(batch * kSteps).batch(batch), micro, kSteps);
  ASSERT_EQ(got[0].size(), want.size());
  for (size_t s = 0; s < want.size(); ++s) EXPECT_NEAR(got[0][s], want[s], 1e-5 * std::abs(want[s])) << "step " << s + 1;
}

// Runs a 2-rank pipeline whose setup should fail; returns the message every rank got.
std::string pipeline_error(const AutoParallelContext& ctx, int devices, int micro, int64_t batch,
                           const std::function<std::shared_ptr<nn::Cell>()>& make_net) {
  ParallelContextGuard guard(ctx);
  std::vector<std::string> errors(devices);
  run_world(devices, Wire::kInproc, [&](int rank) {
    try {
      auto net = make_net();
      nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), micro);
      Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
      model.train(1, pipe_rows(batch).batch(batch));
    } catch (const InvalidArgument& e) {
      errors[rank] = e.what();
    }
  });
  for (int r = 1; r < devices; ++r) EXPECT_EQ(errors[r], errors[0]);
  return errors[0];
}

AutoParallelContext stages_ctx(int p) {
  return {.parallel_mode = ParallelMode::kSemiAutoParallel, .gradients_mean = true, .dataset_strategy = "full_batch",
          .pipeline_stages = p};
}

TEST(PipelineErrors, DecreasingStageNumbersAreRefusedNamingBothCells) {
  EXPECT_THAT(pipeline_error(stages_ctx(2), 2, 2, 8, [] { return pipe_net(3, {0, 1, 0}); }),
              testing::HasSubstr("cell '2' has pipeline_stage 0 but runs after cell '1' with pipeline_stage 1"));
}

TEST(PipelineErrors, AStageWithNoCellIsRefused) {
  EXPECT_THAT(pipeline_error(stages_ctx(3), 3, 3, 9, [] { return pipe_net(2, {0, 2}); }),
              testing::HasSubstr("stage 1 has no cell"));
}

TEST(PipelineErrors, MicroSizeBelowTheStagesIsRefused) {
  EXPECT_THAT(pipeline_error(stages_ctx(2), 2, 1, 8, [] { return pipe_net(2, {0, 1}); }),
              testing::HasSubstr("micro_size 1 is smaller than pipeline_stages 2"));
}

TEST(PipelineErrors, ABatchNotDivisibleByMicroSizeIsRefused) {
  EXPECT_THAT(pipeline_error(stages_ctx(2), 2, 4, 10, [] { return pipe_net(2, {0, 1}); }),
              testing::HasSubstr("the batch of 10 rows is not divisible by micro_size 4"));
}

TEST(PipelineErrors, StagesTimesReplicasOtherThanTheDevicesIsRefused) {
  EXPECT_THAT(pipeline_error(stages_ctx(3), 4, 4, 12, [] { return pipe_net(3, {0, 1, 2}); }),
              testing::HasSubstr("pipeline_stages 3 does not divide the 4 devices"));
}

TEST(PipelineErrors, AParameterReadByAStageItWasNotAddedToIsRefused) {
  EXPECT_THAT(pipeline_error(stages_ctx(3), 3, 3, 9, [] { return std::make_shared<TiedNet>(false); }),
              testing::HasSubstr("stage 1 reads parameter 'w', which belongs to another stage; call add_pipeline_stage(1)"));
}

}  // namespace pipeline_parallel_test
}  // namespace
}  // namespace sf::traintest

namespace sf::traintest {
namespace {
namespace pipeline_parallel_test {

TEST(PipelineErrors, ARefusalOnOneRankStopsEveryRankWithoutAStep) {
  ParallelContextGuard guard(stages_ctx(2));
  std::vector<std::string> errors(2);
  run_world(2, Wire::kInproc, [&](int rank) {
    auto net = pipe_net(2, {0, 1});
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 2);
    // Rank 1 hands its optimizer every parameter instead of its stage's.
    Model model(pipe, nn::Momentum(rank == 1 ? net->trainable_params() : net->infer_param_pipeline_stage(), 0.02f, 0.9f));
    try {
      model.train(1, pipe_rows(8).batch(8));
    } catch (const InvalidArgument& e) {
      errors[rank] = e.what();
    }
  });
  EXPECT_THAT(errors[1], testing::HasSubstr("the optimizer updates '0.0.weight', which stage 1 does not read"));
  EXPECT_THAT(errors[0], testing::HasSubstr("rank 1 refused the configuration"));
}

}  // namespace pipeline_parallel_test
}  // namespace
}  // namespace sf::traintest

namespace sf::traintest {
namespace {
namespace pipeline_parallel_test {

// Rank 1 (the last stage) fails after its third step; rank 0, waiting for its gradients in the
// fourth, must get an error naming rank 1 at once (its endpoint is closed), not hang.
TEST(PipelineFailure, ANeighbourThatDiesMidTrainingIsNamed) {
  ParallelContextGuard guard(stages_ctx(2));
  struct Die : Callback {
    int rank = 0;
    void on_step_end(const RunContext& ctx) override {
      if (rank == 1 && ctx.step_in_epoch == 3) throw Error("rank 1 stops");
    }
  };
  std::vector<std::string> errors(2);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_ANY_THROW(run_world(2, Wire::kInproc, [&](int rank) {
    auto net = pipe_net(2, {0, 1});
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 2);
    Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
    auto die = std::make_shared<Die>();
    die->rank = rank;
    try {
      model.train(1, pipe_rows(8 * 10).batch(8), {die});
    } catch (const std::exception& e) {
      errors[rank] = e.what();
      throw;
    }
  }));
  EXPECT_EQ(errors[1], "rank 1 stops");
  EXPECT_THAT(errors[0], testing::HasSubstr("nothing from rank 1"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace pipeline_parallel_test
}  // namespace
}  // namespace sf::traintest

namespace sf::traintest {
namespace {
namespace pipeline_parallel_test {

// The micro-batch actors alive at once on stage s: m under GPipe, p - s under 1F1B (p = 4, m = 8).
std::vector<int> peak_in_flight(const char* scheduler) {
  AutoParallelContext ctx = stages_ctx(4);
  ctx.pipeline_scheduler = scheduler;
  ParallelContextGuard guard(ctx);
  std::vector<int> peak(4);
  run_world(4, Wire::kInproc, [&](int rank) {
    auto net = pipe_net(4, {0, 1, 2, 3});
    nn::PipelineCell pipe(nn::WithLossCell(*net, nn::CrossEntropyLoss()), 8);
    Model model(pipe, nn::Momentum(net->infer_param_pipeline_stage(), 0.02f, 0.9f));
    model.train(1, pipe_rows(16).batch(16));
    peak[rank] = model.pipeline_step()->last().peak_in_flight;
  });
  return peak;
}

TEST(PipelineParallel, MicroBatchesInFlightAreBoundedByTheSchedule) {
  EXPECT_EQ(peak_in_flight("gpipe"), (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(peak_in_flight("1f1b"), (std::vector<int>{4, 3, 2, 1}));
}

}  // namespace pipeline_parallel_test
}  // namespace
}  // namespace sf::traintest
