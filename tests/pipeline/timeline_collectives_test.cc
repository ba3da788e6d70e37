/// @file
/// The measured timeline of a real pipeline step holds the collectives inside its stages: an MLP
/// of four MatMuls in 2 stages, each stage tensor parallel over 2 devices (a column-parallel
/// MatMul, then a row-parallel one whose partial sums the stage AllReduces), run by StageRuntime
/// on 4 virtual devices with record_timeline. Every stage's timeline then has collectives, each
/// in range and inside the F, B or W span of its own micro-batch on that stage, and every rank
/// gets the same timeline; the same network data parallel inside its stages has none in the
/// first stage's forward.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/comm/inproc/transport.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/ops/builder.h>
#include <shardflow/pipeline/render_svg.h>
#include <shardflow/pipeline/stage_runtime.h>
#include <shardflow/pipeline/timeline_json.h>
#include <shardflow/pipeline/timeline_stats.h>
#include "tests/comm/rank_threads.h"

namespace sf::pipeline {
namespace {

constexpr int kStages = 2;
constexpr int kPerStage = 2;
constexpr int kMicro = 4;
constexpr int64_t kRows = 8;  // one micro-batch

// x (8, 6) -> relu(x W0) W1 [stage 0] -> relu(a W2) W3 [stage 1] -> cross entropy over 4 classes.
struct Mlp {
  Graph g;
  int loss = -1;
  std::vector<int> stage;
  Mlp() {
    GraphBuilder b(g);
    const Value x = b.input("data", {kRows, 6});
    const Value y = b.input("label", {kRows}, DType::kI32);
    const int s0 = g.size();
    const Value h0 = b.op("ReLU", {b.op("MatMul", {x, b.parameter("w0", {6, 8})}, {}, "mm0")}, {}, "relu0");
    const Value a = b.op("MatMul", {h0, b.parameter("w1", {8, 8})}, {}, "mm1");
    const int s1 = g.size();
    const Value h2 = b.op("ReLU", {b.op("MatMul", {a, b.parameter("w2", {8, 8})}, {}, "mm2")}, {}, "relu2");
    loss = b.softmax_cross_entropy(b.op("MatMul", {h2, b.parameter("w3", {8, 4})}, {}, "mm3"), y).id;
    stage.assign(g.size(), -1);
    for (int i = s0; i < s1; ++i) stage[i] = 0;
    for (int i = s1; i < g.size(); ++i) stage[i] = 1;
  }
};

// Megatron's pairing on every stage: column-parallel, then row-parallel (a partial sum).
StrategyTable tensor_parallel() {
  StrategyTable t;
  for (const char* column : {"mm0", "mm2"}) t[column] = OpStrategy{{{1, 1}, {1, kPerStage}}};
  for (const char* relu : {"relu0", "relu2"}) t[relu] = OpStrategy{{{1, kPerStage}}};
  for (const char* row : {"mm1", "mm3"}) t[row] = OpStrategy{{{1, kPerStage}, {kPerStage, 1}}};
  return t;
}

Tensor ramp(const Shape& shape, float scale) {
  Tensor t = Tensor::zeros(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = scale * static_cast<float>((i * 7) % 11 - 5);
  return t;
}

// One recorded step on kStages x kPerStage virtual devices: every rank's timeline.
std::vector<Timeline> record_step(ScheduleKind kind, const StrategyTable& strategies) {
  const Mlp net;
  const auto stages =
      std::make_shared<const std::vector<StageGraph>>(split_stages(net.g, net.loss, net.stage, kStages));
  const Schedule schedule = make_schedule(kind, kStages, kMicro);
  const int world = kStages * kPerStage;
  std::vector<Timeline> timelines(world);
  const auto transports = comm::make_inproc_world(world);
  commtest::run_ranks(world, [&](int rank) {
    comm::RankBinding bind(std::make_shared<comm::RankContext>(transports[rank], rank));
    try {
      StageRuntime runtime(
          stages, schedule,
          [](const std::string&, const TensorLayout& layout, const Shape& shape) {
            return ramp(layout.local_shape(shape), 0.05f);
          },
          {.per_stage = kPerStage, .gradients_mean = true, .record_timeline = true, .strategies = strategies});
      const auto feed = [](int micro, const std::string& name) {
        if (name == "label") {
          std::vector<int32_t> labels(kRows);
          for (int64_t i = 0; i < kRows; ++i) labels[i] = static_cast<int32_t>((i + micro) % 4);
          return Tensor::from_vector({kRows}, labels);
        }
        return ramp({kRows, 6}, 0.1f * static_cast<float>(micro + 1));
      };
      runtime.run_step(feed);
      runtime.run_step(feed);  // the second step's timeline: a fresh list, not the first one's added to
      timelines[rank] = runtime.last_timeline();
    } catch (...) {
      transports[rank]->close();  // its peers fail at once instead of waiting for their timeout
      throw;
    }
  });
  return timelines;
}

// The span of `phase` for (micro, chunk) on a stage, or null.
const Span* span_of(const std::vector<Span>& spans, char phase, int micro, int chunk) {
  const ActionKind kind = phase == 'F' ? ActionKind::kForward : phase == 'B' ? ActionKind::kBackward
                                                                             : ActionKind::kWeight;
  for (const Span& s : spans)
    if (s.action.kind == kind && s.action.micro_batch == micro && s.action.chunk == chunk) return &s;
  return nullptr;
}

class TimelineCollectives : public testing::TestWithParam<ScheduleKind> {};

TEST_P(TimelineCollectives, TensorParallelStagesRecordTheirCollectivesInsideTheirPhases) {
  const std::vector<Timeline> all = record_step(GetParam(), tensor_parallel());
  const Timeline& t = all[0];
  ASSERT_EQ(t.collectives.size(), static_cast<size_t>(kStages));
  for (int s = 0; s < kStages; ++s) {
    const auto& list = t.collectives[s];
    ASSERT_FALSE(list.empty()) << "stage " << s;
    for (const CollectiveSpan& c : list) {
      const std::string what = fmt::format("stage {} {} in {}{} ({} to {})", s, c.op, c.phase, c.micro_batch, c.start,
                                           c.finish);
      EXPECT_FALSE(c.op.empty()) << what;
      EXPECT_NE(c.op, "Send") << what;  // stage-to-stage transfers are spans, not collectives
      EXPECT_NE(c.op, "Receive") << what;
      EXPECT_FALSE(c.group.empty()) << what;
      EXPECT_GE(c.micro_batch, 0) << what;
      EXPECT_LT(c.micro_batch, kMicro) << what;
      EXPECT_EQ(c.chunk, 0) << what;
      EXPECT_TRUE(c.phase == 'F' || c.phase == 'B' || c.phase == 'W') << what;
      EXPECT_LE(c.start, c.finish) << what;
      EXPECT_GE(c.start, 0) << what;
      // Inside its own phase's span on the same stage (the span's µs are floored: 1 µs slack).
      const Span* span = span_of(t.spans[s], c.phase, c.micro_batch, c.chunk);
      ASSERT_NE(span, nullptr) << what;
      EXPECT_GE(c.start, span->start - 1) << what << " vs " << to_string(span->action) << " " << span->start;
      EXPECT_LE(c.finish, span->finish + 1) << what << " vs " << to_string(span->action) << " " << span->finish;
    }
    // The row-parallel MatMul's partial sums: an AllReduce in every micro-batch's forward.
    std::map<int, int> reduces;
    for (const CollectiveSpan& c : list) {
      if (c.phase == 'F' && c.op == "AllReduce") ++reduces[c.micro_batch];
    }
    for (int m = 0; m < kMicro; ++m) EXPECT_GE(reduces[m], 1) << "stage " << s << " micro-batch " << m;
  }
  // Every rank gathered the same timeline, and it survives its file form and is drawn.
  for (size_t r = 1; r < all.size(); ++r) {
    EXPECT_EQ(timeline_to_json(all[r]), timeline_to_json(t)) << "rank " << r;
  }
  const Timeline back = timeline_from_json(timeline_to_json(t));
  EXPECT_EQ(timeline_to_json(back), timeline_to_json(t));
  const TimelineStats stats = timeline_stats(t);
  EXPECT_EQ(stats.collectives, static_cast<int>(t.collectives[0].size() + t.collectives[1].size()));
  EXPECT_GT(stats.collective, 0);
  EXPECT_LE(stats.collective_in_compute, stats.collective + 1e-9);
  const std::string svg = render_svg(t);
  const std::string block = "<rect class=\"coll ";
  int blocks = 0;
  for (size_t at = svg.find(block); at != std::string::npos; at = svg.find(block, at + 1)) ++blocks;
  EXPECT_EQ(blocks, stats.collectives);
}

INSTANTIATE_TEST_SUITE_P(Schedules, TimelineCollectives,
                         testing::Values(ScheduleKind::kOneFOneB, ScheduleKind::kGPipe, ScheduleKind::kZeroBubbleH1),
                         [](const testing::TestParamInfo<ScheduleKind>& info) {
                           return std::string(schedule_name(info.param));
                         });

TEST(TimelineCollectivesDataParallel, TheFirstStagesForwardRunsNoneWithoutTensorParallel) {
  // No strategies: every op data parallel over the stage's 2 devices. The first stage's MatMuls
  // and ReLUs then need nothing from each other's rows in F, where tensor parallel AllReduces
  // every micro-batch; what the stages still run inside their phases (the loss over the cut
  // batch, gradients of values a stage received) is recorded the same way.
  const std::vector<Timeline> all = record_step(ScheduleKind::kOneFOneB, {});
  const Timeline& t = all[0];
  ASSERT_EQ(t.collectives.size(), static_cast<size_t>(kStages));
  for (const CollectiveSpan& c : t.collectives[0]) EXPECT_NE(c.phase, 'F') << "stage 0 " << c.op << " in F";
  for (int s = 0; s < kStages; ++s) {
    for (const CollectiveSpan& c : t.collectives[s]) {
      EXPECT_LT(c.micro_batch, kMicro) << "stage " << s;
      EXPECT_LE(c.start, c.finish) << "stage " << s;
    }
  }
  const std::vector<Timeline> tp = record_step(ScheduleKind::kOneFOneB, tensor_parallel());
  int forward = 0;
  for (const CollectiveSpan& c : tp[0].collectives[0]) forward += c.phase == 'F' ? 1 : 0;
  EXPECT_GE(forward, kMicro);
}

}  // namespace
}  // namespace sf::pipeline
