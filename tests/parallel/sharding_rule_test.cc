// Sharding rules: each op's device matrix, input and output layouts (partial where a reduce
// loop is split), the repeat axis, the default strategy, and the communication a graph's
// sharding inserts (seed 002's AllReduce over ranks 0-1-2-3 and 4-5-6-7, seed 001's
// ReduceScatter).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/sharding/graph_sharding.h>
#include <shardflow/parallel/sharding/op_sharding.h>

namespace sf {
namespace {

using ::testing::ElementsAre;
using Map = TensorLayout::TensorMap;

// A graph of one op over inputs of the given shapes; returns the op's node.
struct OneOp {
  Graph g;
  int id = -1;
  OneOp(const std::string& op, const std::vector<Shape>& shapes, Attrs attrs = {}) {
    GraphBuilder b(g);
    std::vector<Value> in;
    for (size_t i = 0; i < shapes.size(); ++i) in.push_back(b.input(fmt::format("x{}", i), shapes[i]));
    id = b.op(op, in, std::move(attrs), "op").id;
  }
  OpSharding shard(const std::optional<OpStrategy>& s, int64_t devices = 8) const {
    std::vector<Shape> shapes;
    for (int p : g.node(id).inputs) shapes.push_back(g.node(p).shape);
    return shard_op(g.node(id), shapes, s, devices);
  }
};

Attrs transposes(bool a, bool b) { return {{"transpose_a", int64_t{a}}, {"transpose_b", int64_t{b}}}; }

TEST(MatMulRule, DeviceMatrixIsABCWithXOnAxes01AndWOn12) {
  const OneOp mm("MatMul", {{16, 32}, {32, 8}});
  const OpSharding s = mm.shard(OpStrategy{{{2, 4}, {4, 1}}});
  EXPECT_THAT(s.mesh.dims(), ElementsAre(2, 4, 1));
  EXPECT_EQ(s.inputs[0].tensor_map(), (Map{{0}, {1}}));
  EXPECT_EQ(s.inputs[1].tensor_map(), (Map{{1}, {}}));
  EXPECT_EQ(s.output.tensor_map(), (Map{{0}, {}}));
  EXPECT_THAT(s.output.partial(), ElementsAre(1));  // k split 4 ways: a partial sum
  EXPECT_FALSE(s.carried.is_partial());             // resolved by default
  EXPECT_TRUE(s.given);
}

TEST(MatMulRule, EveryTransposeCombinationMapsStoredDims) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "transpose_a " << ta << " transpose_b " << tb);
      // m = 16 in 2 blocks, k = 32 in 2, n = 8 in 2; the strategy follows each input's stored dims.
      const OneOp mm("MatMul", {ta ? Shape{32, 16} : Shape{16, 32}, tb ? Shape{8, 32} : Shape{32, 8}},
                     transposes(ta, tb));
      const Strategy x = ta ? Strategy{2, 4} : Strategy{4, 2};
      const Strategy w = tb ? Strategy{1, 2} : Strategy{2, 1};
      const OpSharding s = mm.shard(OpStrategy{{x, w}});
      EXPECT_THAT(s.mesh.dims(), ElementsAre(4, 2, 1));  // (m, k, n)
      EXPECT_EQ(s.inputs[0].tensor_map(), ta ? (Map{{1}, {0}}) : (Map{{0}, {1}}));
      EXPECT_EQ(s.inputs[1].tensor_map(), tb ? (Map{{}, {1}}) : (Map{{1}, {}}));
      EXPECT_THAT(s.output.partial(), ElementsAre(1));
    }
}

TEST(MatMulRule, RepeatedCalculationAppendsTheRepeatAxisLast) {
  const OneOp mm("MatMul", {{16, 32}, {32, 8}});
  const OpSharding s = mm.shard(OpStrategy{{{2, 1}, {1, 2}}});
  EXPECT_THAT(s.mesh.dims(), ElementsAre(2, 1, 2, 2));
  // x's block i sits on ranks 4i..4i+3; the repeat axis varies fastest.
  EXPECT_THAT(s.inputs[0].replica_group(0), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(s.inputs[1].replica_group(0), ElementsAre(0, 1, 4, 5));
}

TEST(MatMulRule, LayoutStrategiesOfSeed001) {
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  const OneOp mm("MatMul", {{16, 32}, {32, 8}});
  const OpSharding s = mm.shard(OpStrategy{{layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")},
                                           {layout({"mp", "sp", "dp"}, "None")}});
  EXPECT_THAT(s.mesh.dims(), ElementsAre(2, 2, 2));
  EXPECT_EQ(s.output.tensor_map(), (Map{{2}, {}}));
  EXPECT_THAT(s.output.partial(), ElementsAre(0, 1));
  EXPECT_EQ(s.carried.tensor_map(), (Map{{2, 1, 0}, {}}));
}

TEST(ElementwiseRule, BroadcastDimsBelongToNoLoop) {
  const OneOp add("Add", {{16, 32}, {32}});
  const OpSharding s = add.shard(OpStrategy{{{2, 4}, {4}}});
  EXPECT_EQ(s.inputs[1].tensor_map(), (Map{{1}}));
  EXPECT_FALSE(s.output.is_partial());
  const OneOp sub("Sub", {{16, 32}, {1, 32}});
  EXPECT_EQ(sub.shard(OpStrategy{{{2, 4}, {1, 4}}}).inputs[1].tensor_map(), (Map{{}, {1}}));
}

TEST(BiasAddRule, TheBiasFollowsTheChannels) {
  const OneOp bias("BiasAdd", {{16, 32}, {32}});
  const OpSharding s = bias.shard(OpStrategy{{{2, 4}, {4}}});
  EXPECT_EQ(s.inputs[1].tensor_map(), (Map{{1}}));
  EXPECT_EQ(bias.shard(OpStrategy{{{8, 1}, {1}}}).inputs[1].replica_group(0).size(), 8u);
}

TEST(ReduceRule, ASplitReducedDimLeavesAPartialMean) {
  const OneOp sum("ReduceSum", {{16, 4, 8}}, {{"axis", std::vector<int64_t>{2}}, {"keep_dims", int64_t{0}}});
  const OpSharding s = sum.shard(OpStrategy{{{2, 1, 4}}});
  EXPECT_EQ(s.output.tensor_map(), (Map{{0}, {}}));
  EXPECT_THAT(s.output.partial(), ElementsAre(2));
  EXPECT_FLOAT_EQ(s.scale, 1.0f);
  const OneOp mean("ReduceMean", {{16, 8}}, {{"axis", std::vector<int64_t>{1}}, {"keep_dims", int64_t{1}}});
  const OpSharding m = mean.shard(OpStrategy{{{2, 4}}});
  EXPECT_EQ(m.output.tensor_map(), (Map{{0}, {}}));
  EXPECT_FLOAT_EQ(m.scale, 0.25f);
}

TEST(LossRules, SoftmaxCrossEntropyKeepsASplitClassDimAndReducesItInTheOp) {
  Graph g;
  GraphBuilder b(g);
  const Value loss = b.softmax_cross_entropy(b.input("logits", {16, 8}), b.input("labels", {16}, DType::kI32));
  const Node& n = g.node(loss.id);
  const OpSharding s = shard_op(n, {{16, 8}, {16}}, OpStrategy{{{2, 4}, {2}}}, 8);
  EXPECT_EQ(s.inputs[0].tensor_map(), (Map{{0}, {1}}));  // classes stay split: no gather
  // Partial over the batch only: the lowering reduces the class shards itself (local loop).
  EXPECT_THAT(s.output.partial(), ElementsAre(0));
  EXPECT_FLOAT_EQ(s.scale, 0.5f);
  EXPECT_FALSE(s.carried.is_partial());
}

TEST(ReshapeRule, TheLeadingDimOfEachRunStaysSplit) {
  // (16) -> (16) and (32) -> (4, 8): the 32's split stays on the 4 (tests/parallel/reshape_sharding_test.cc).
  const OneOp reshape("Reshape", {{16, 32}}, {{"shape", Shape{16, 4, 8}}});
  const OpSharding s = reshape.shard(OpStrategy{{{2, 4}}});
  EXPECT_EQ(s.inputs[0].tensor_map(), (Map{{0}, {1}}));
  EXPECT_EQ(s.output.tensor_map(), (Map{{0}, {1}, {}}));
  const OneOp flatten("Flatten", {{16, 4, 4}});
  EXPECT_EQ(flatten.shard(std::nullopt).inputs[0].tensor_map(), (Map{{0}, {}, {}}));
}

TEST(DefaultStrategy, DataParallelWhereTheBatchDividesElseReplicated) {
  const OneOp mm("MatMul", {{16, 32}, {32, 8}});
  const OpSharding s = mm.shard(std::nullopt);
  EXPECT_FALSE(s.given);
  EXPECT_EQ(s.strategy.str(), "in_strategy ((8,1), (1,1))");
  const OneOp odd("MatMul", {{12, 32}, {32, 8}});
  EXPECT_EQ(odd.shard(std::nullopt).strategy.str(), "in_strategy ((1,1), (1,1))");
}

// Seed 002's network: matmul ((2,4),(4,1)), relu and matmul2 by default, MSELoss.
TEST(GraphSharding, Seed002AllReducesThePartialSumsOverRanks0To3And4To7) {
  Graph g;
  GraphBuilder b(g);
  const Value x = b.input("x", {16, 32});
  const Value h = b.op("MatMul", {x, b.parameter("w", {32, 16})}, transposes(false, false), "matmul");
  const Value y = b.matmul(b.relu(h), b.parameter("w2", {16, 16}));
  const Value loss = b.mse_loss(y, b.input("target", {16, 16}));
  const GraphSharding s = shard_graph(g, {loss.id}, {{"matmul", OpStrategy{{{2, 4}, {4, 1}}}}}, 8);
  const RedistributionPlan& out = s.at(h.id).out_plan;
  ASSERT_EQ(out.steps.size(), 1u);
  EXPECT_EQ(out.steps[0].kind, StepKind::kAllReduce);
  EXPECT_THAT(out.steps[0].groups(), ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
  // The parameter takes its consumer's layout: w (4,1) on ranks, replicated over dp.
  EXPECT_EQ(s.at(g.find("w")).layout.tensor_map(), (Map{{1}, {}}));
  // The ops without a strategy run data parallel; the loss's partial mean is AllReduced.
  EXPECT_EQ(s.at(loss.id).op->strategy.str(), "in_strategy ((8,1), (8,1))");
  EXPECT_EQ(s.at(loss.id).out_plan.steps[0].kind, StepKind::kAllReduce);
  EXPECT_NE(s.str(g).find("matmul: in_strategy ((2,4), (4,1)) device matrix (2,4,1)"), std::string::npos) << s.str(g);
}

TEST(GraphSharding, Seed001OutStrategyReduceScatters) {
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  Graph g;
  GraphBuilder b(g);
  const Value y = b.op("MatMul", {b.input("x", {16, 32}), b.parameter("w", {32, 8})}, transposes(false, false), "mm");
  const Value loss = b.reduce_sum(y);
  const GraphSharding s = shard_graph(
      g, {loss.id},
      {{"mm", OpStrategy{{layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")}, {layout({"mp", "sp", "dp"}, "None")}}}},
      8);
  const RedistributionPlan& out = s.at(y.id).out_plan;
  // Split minor-first over sp then dp: the planner's groups list ranks ascending, so the
  // (sp, dp)-major scatter is two ReduceScatters (the same bytes as one), never an AllReduce.
  ASSERT_EQ(out.steps.size(), 2u) << out.str();
  for (const RedistributionStep& step : out.steps) EXPECT_EQ(step.kind, StepKind::kReduceScatter) << out.str();
}

}  // namespace
}  // namespace sf
