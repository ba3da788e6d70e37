// Splitting a graph into stage graphs: what crosses each boundary (a value read two stages on is
// relayed), the objective of each stage, and the refusals — a stage reading a later stage, a
// stage with no op, a loss before the last stage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include <shardflow/pipeline/stage_split.h>

namespace sf::pipeline {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace stage_split_test {

// x -> a = relu(x W0) [stage 0] -> b = relu(a W1) [stage 1] -> logits = (b + a) W2 [stage 2] -> loss.
struct Net {
  Graph g;
  int loss = -1;
  std::vector<int> stage;
  Net() {
    GraphBuilder b(g);
    Value x = b.input("x", {4, 6});
    Value y = b.input("y", {4}, DType::kI32);
    auto w = [&](const char* name, int64_t in, int64_t out) { return b.parameter(name, {in, out}); };
    const int s0 = g.size();
    Value a = b.relu(b.matmul(x, w("w0", 6, 8)));
    const int s1 = g.size();
    Value h = b.relu(b.matmul(a, w("w1", 8, 8)));
    const int s2 = g.size();
    Value logits = b.matmul(b.add(h, a), w("w2", 8, 3));
    loss = b.softmax_cross_entropy(logits, y).id;
    stage.assign(g.size(), -1);
    for (int i = s0; i < s1; ++i) stage[i] = 0;
    for (int i = s1; i < s2; ++i) stage[i] = 1;
    for (int i = s2; i < g.size(); ++i) stage[i] = 2;
  }
};

std::vector<std::string> names(const StageGraph& s, const std::vector<int>& ids) {
  std::vector<std::string> out;
  for (int id : ids) out.push_back(s.graph.node(id).name);
  return out;
}

TEST(StageSplit, BoundariesRelayAValueReadTwoStagesOn) {
  Net n;
  const auto stages = split_stages(n.g, n.loss, n.stage, 3);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].recv_inputs.size(), 0u);
  EXPECT_EQ(stages[0].send_outputs.size(), 1u);  // a
  EXPECT_EQ(stages[1].recv_inputs.size(), 1u);
  EXPECT_EQ(stages[1].send_outputs.size(), 2u);  // h, and a relayed
  EXPECT_EQ(stages[2].recv_inputs.size(), 2u);
  EXPECT_EQ(stages[2].send_outputs.size(), 0u);
  EXPECT_GE(stages[2].loss, 0);
  EXPECT_EQ(stages[0].data_names, std::vector<std::string>{"x"});
  EXPECT_EQ(stages[2].data_names, std::vector<std::string>{"y"});
  EXPECT_EQ(stages[1].param_names, std::vector<std::string>{"w1"});
  for (const StageGraph& s : stages) {
    EXPECT_EQ(s.dout_inputs.size(), s.send_outputs.size());
    ASSERT_GE(s.objective, 0);
    EXPECT_TRUE(s.graph.node(s.objective).shape.empty()) << "the objective is a scalar";
  }
  EXPECT_EQ(stages[2].objective, stages[2].loss);
  // Stage 1 sends on what it received: the relayed output is its recv Input itself.
  EXPECT_THAT(names(stages[1], stages[1].send_outputs), testing::Contains("recv/ReLU"));
}

TEST(StageSplit, ReadingALaterStageIsRefusedNamingTheNodes) {
  Net n;
  n.stage[n.g.find("ReLU")] = 2;  // a, read by stage 1, moved after it
  EXPECT_THAT([&] { split_stages(n.g, n.loss, n.stage, 3); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("reads ReLU 'ReLU' from the later stage 2")));
}

TEST(StageSplit, AnEmptyStageIsRefused) {
  Net n;
  for (int& s : n.stage)
    if (s == 1) s = 0;
  EXPECT_THAT([&] { split_stages(n.g, n.loss, n.stage, 3); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("stage 1 has no cell")));
}

TEST(StageSplit, ALossBeforeTheLastStageIsRefused) {
  Net n;
  EXPECT_THAT([&] { split_stages(n.g, n.loss, n.stage, 4); },
              testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("is computed on stage 2, but the last stage is 3")));
}

}  // namespace stage_split_test
}  // namespace
}  // namespace sf::pipeline
