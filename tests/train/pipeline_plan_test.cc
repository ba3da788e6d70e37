// The plan of a pipeline's step before any rank starts (train/pipeline_plan.h), and what the
// pipeline does with it: an MLP of four MatMuls on 2 stages of 2 x 2 devices, its per-stage
// figures against sizes worked out by hand, the strategies used saved and loaded back, the
// search of auto parallel mode run per stage — and that mode trained on 8 virtual devices equal
// to 1 device, writing each rank's parallel IR.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/train/parallel_fixture.h"
#include "tests/train/pipeline_net.h"
#include "tests/train/pipeline_tp_mlp.h"
#include <shardflow/parallel/strategy_file.h>
#include <shardflow/train/model.h>
#include <shardflow/train/pipeline_cell.h>
#include <shardflow/train/pipeline_plan.h>

namespace sf::traintest {
namespace {

namespace fs = std::filesystem;

constexpr int kStages = 2;
constexpr int kMicro = 4;
constexpr int64_t kBatch = 32;  // micro-batches of 8 rows

AutoParallelContext pipeline_context(ParallelMode mode, const std::string& load_file = "") {
  return {.parallel_mode = mode,
          .gradients_mean = true,
          .dataset_strategy = "full_batch",
          .strategy_ckpt_load_file = load_file,
          .pipeline_stages = kStages,
          .pipeline_scheduler = "1f1b"};
}

// The MLP's layers 0-1 on stage 0, 2-3 on stage 1; cut dp x tp when tp > 0.
struct StagedMlp {
  std::vector<std::shared_ptr<Layer>> layers;
  std::shared_ptr<nn::SequentialCell> net = mlp(layers);
  nn::PipelineCell cell{nn::WithLossCell(*net, nn::CrossEntropyLoss()), kMicro};
  StagedMlp(int64_t dp, int64_t tp) {
    for (int i = 0; i < kLayers; ++i) layers[i]->set_pipeline_stage(i * kStages / kLayers);
    if (tp > 0) shard_layers(layers, dp, tp);
  }
  PipelinePlan plan(const AutoParallelContext& context, int64_t devices) {
    return plan_pipeline(cell, {{kBatch, kPipeFeatures}, {kBatch}}, {DType::kF32, DType::kI32}, devices, context);
  }
};

TEST(PipelinePlan, FiguresOfEachStageAreTheBlocksItsRanksHold) {
  StagedMlp m(2, 2);
  const PipelinePlan plan = m.plan(pipeline_context(ParallelMode::kSemiAutoParallel), 8);
  ASSERT_EQ(plan.figures.size(), 2u);
  EXPECT_EQ(plan.per_stage, 4);
  EXPECT_EQ(plan.figures[1].first_rank, 4);
  // Column-parallel w0 (12 x 24 over tp: 12 x 12), row-parallel w1 (24 x 24: 12 x 24); then
  // w2 (24 x 24: 24 x 12) and w3 (24 x 10: 12 x 10). f32.
  EXPECT_EQ(plan.figures[0].parameter_bytes, (12 * 12 + 12 * 24) * 4.0);
  EXPECT_EQ(plan.figures[1].parameter_bytes, (24 * 12 + 12 * 10) * 4.0);
  // 1F1B: stage 0 holds as many micro-batches as there are stages, the last one 1.
  EXPECT_EQ(plan.figures[0].peak_in_flight, 2);
  EXPECT_EQ(plan.figures[1].peak_in_flight, 1);
  // Each block is replicated over dp = 2: its gradient's ring AllReduce sends 2(n-1)/n of the
  // block, the whole block for n = 2.
  EXPECT_DOUBLE_EQ(plan.figures[0].gradient_bytes, plan.figures[0].parameter_bytes);
  EXPECT_DOUBLE_EQ(plan.figures[1].gradient_bytes, plan.figures[1].parameter_bytes);
  // A row-parallel MatMul's partial sums are reduced inside the stage, every micro-batch.
  EXPECT_GT(plan.figures[0].collective_bytes, plan.figures[0].gradient_bytes);
  for (const auto& f : plan.figures) EXPECT_GT(f.transfer_bytes, 0) << "stage of rank " << f.first_rank;
  EXPECT_EQ(plan.used().at("0/matmul/MatMul").str(), m.net->strategies().at("0/matmul/MatMul").str());

  const std::string text = plan.str(true, "shard()");
  EXPECT_NE(text.find("dry run on 8 ranks: 2 stages x 4 ranks each, 4 micro-batches, 1f1b"), std::string::npos)
      << text;
  EXPECT_NE(text.find("stage 1 (ranks 4..7)"), std::string::npos) << text;
  EXPECT_NE(text.find("0/matmul/MatMul: in_strategy (layout('dp', 'None'), layout('None', 'tp')) — given by shard()"),
            std::string::npos)
      << text;
}

TEST(PipelinePlan, StrategiesUsedLoadBackAsAStrategyFile) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("sf_pipeline_plan_{}", ::getpid());
  fs::create_directories(dir);
  const std::string file = (dir / "used.json").string();
  StagedMlp given(2, 2);
  const PipelinePlan first = given.plan(pipeline_context(ParallelMode::kSemiAutoParallel), 8);
  save_strategy_file(file, first.used());
  StagedMlp plain(0, 0);  // no shard(): the file gives every strategy
  const PipelinePlan second = plain.plan(pipeline_context(ParallelMode::kSemiAutoParallel, file), 8);
  EXPECT_EQ(strategy_json(second.used()), strategy_json(first.used()));
  EXPECT_EQ(second.figures[0].parameter_bytes, first.figures[0].parameter_bytes);
  fs::remove_all(dir);
}

TEST(PipelinePlan, RefusesAStrategyNamingNoOpAndAConfigurationThatDoesNotFit) {
  StagedMlp m(2, 2);
  m.net->shard("no/such/MatMul", OpStrategy{{{2, 1}, {1, 1}}});
  EXPECT_THROW(
      {
        try {
          m.plan(pipeline_context(ParallelMode::kSemiAutoParallel), 8);
        } catch (const InvalidArgument& e) {
          EXPECT_NE(std::string(e.what()).find("'no/such/MatMul'"), std::string::npos) << e.what();
          throw;
        }
      },
      InvalidArgument);
  StagedMlp n(2, 2);
  EXPECT_THROW(n.plan(pipeline_context(ParallelMode::kSemiAutoParallel), 7), InvalidArgument);  // 2 stages
  EXPECT_THROW(n.plan(pipeline_context(ParallelMode::kSemiAutoParallel), 4), InvalidArgument);  // 2 x 2 != 2
}

TEST(PipelinePlan, AutoParallelSearchesEachStageOverItsDevices) {
  StagedMlp m(0, 0);
  AutoParallelContext context = pipeline_context(ParallelMode::kAutoParallel);
  context.search_mode = "dynamic_programming";
  const PipelinePlan plan = m.plan(context, 8);
  ASSERT_EQ(plan.strategies.searches.size(), 2u);
  for (int v = 0; v < kStages; ++v) {
    // Every MatMul of the stage, and only those, were decided by the stage's search.
    for (int i = 0; i < kLayers; ++i) {
      const std::string op = fmt::format("{}/matmul/MatMul", i);
      EXPECT_EQ(plan.strategies.searches[v].find(op) != nullptr, i * kStages / kLayers == v) << op;
    }
  }
  EXPECT_NE(plan.str(true).find("virtual stage 1: strategy search: dynamic_programming"), std::string::npos);
}

// Auto parallel on 2 stages x 4 devices trains as 1 device does, and writes every rank's IR.
TEST(PipelinePlan, AutoParallelPipelineEqualsOneDeviceAndSavesItsGraphs) {
  constexpr int kSteps = 6;
  const fs::path dir = fs::temp_directory_path() / fmt::format("sf_pipeline_auto_{}", ::getpid());
  AutoParallelContext context = pipeline_context(ParallelMode::kAutoParallel);
  context.search_mode = "dynamic_programming";
  context.save_graphs = true;
  context.save_graphs_path = dir.string();
  ParallelContextGuard guard(context);
  constexpr int kDevices = 8;
  std::vector<std::vector<float>> losses(kDevices);
  set_seed(5);
  run_world(kDevices, Wire::kInproc, [&](int rank) {
    StagedMlp m(0, 0);
    Model model(m.cell, nn::Momentum(m.net->infer_param_pipeline_stage(), 0.02f, 0.9f));
    auto log = std::make_shared<StepLog>(ParameterList{});
    model.train(1, pipe_rows(kBatch * kSteps).batch(kBatch), {log});
    losses[rank] = log->losses;
  });
  set_seed(5);
  std::vector<std::shared_ptr<Layer>> layers;
  auto net = mlp(layers);
  const std::vector<float> want = one_device_pipeline_losses(*net, pipe_rows(kBatch * kSteps).batch(kBatch), kMicro,
                                                             kSteps);
  ASSERT_EQ(losses[0].size(), static_cast<size_t>(kSteps));
  for (int s = 0; s < kSteps; ++s) EXPECT_NEAR(losses[0][s], want[s], 1e-5 * std::abs(want[s])) << "step " << s + 1;
  EXPECT_LT(want.back(), want.front());

  for (int r = 0; r < kDevices; ++r) {
    for (const char* f : {"step_parallel_begin.ir", "step_parallel_begin.dot", "execute.ir", "execute.dot"})
      EXPECT_TRUE(fs::exists(dir / fmt::format("rank_{}", r) / f)) << "rank " << r << " " << f;
  }
  std::ifstream in(dir / "rank_0" / "execute.ir");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("= Send("), std::string::npos);  // stage 0 sends its activations
  EXPECT_NE(text.str().find("= Receive("), std::string::npos);  // and receives their gradients
  std::ifstream begin(dir / "rank_4" / "step_parallel_begin.ir");
  std::stringstream stage1;
  stage1 << begin.rdbuf();
  EXPECT_NE(stage1.str().find("# virtual stage 1 of stage 1 (4 devices)"), std::string::npos) << stage1.str();
  EXPECT_NE(stage1.str().find("3/matmul/MatMul"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sf::traintest
