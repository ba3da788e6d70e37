// Local graphs: a rank's graph has local shapes, the inserted collectives under the consumer's
// name with their groups (seed 002's AllReduce on ranks 0-1-2-3 for ranks 0..3), Inputs and
// Parameters as the blocks their layouts give; a sharded parameter equals the same block of
// the 1-device parameter; local_block cuts blocks of any layout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/sharding/local_block.h>
#include <shardflow/parallel/sharding/local_graph.h>
#include <shardflow/train/parameter.h>

namespace sf {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// Seed 002's forward: matmul ((2,4),(4,1)), relu, matmul2, MSELoss (the rest by default).
struct Seed002Graph {
  Graph g;
  int loss = -1;
  Seed002Graph() {
    GraphBuilder b(g);
    const Value h = b.op("MatMul", {b.input("x", {16, 32}), b.parameter("w", {32, 16})}, {}, "matmul");
    loss = b.mse_loss(b.matmul(b.relu(h), b.parameter("w2", {16, 16})), b.input("target", {16, 16})).id;
  }
  GraphSharding sharding() const { return shard_graph(g, {loss}, {{"matmul", OpStrategy{{{2, 4}, {4, 1}}}}}, 8); }
};

TEST(LocalGraph, Seed002RankGraphHasLocalShapesAndTheAllReduceOnItsGroup) {
  const Seed002Graph s;
  const GraphSharding gs = s.sharding();
  for (int rank : {0, 5}) {
    const LocalGraph lg = build_local_graph(s.g, gs, rank);
    const Graph& g = lg.graph;
    EXPECT_THAT(g.node(g.find("x")).shape, ElementsAre(8, 8));   // (2,4) on (16, 32)
    EXPECT_THAT(g.node(g.find("w")).shape, ElementsAre(8, 16));  // (4,1) on (32, 16)
    EXPECT_THAT(g.node(g.find("matmul")).shape, ElementsAre(8, 16));
    const int ar = g.find("matmul/out/AllReduce");
    ASSERT_GE(ar, 0);
    const std::string group = rank < 4 ? "0-1-2-3" : "4-5-6-7";
    EXPECT_EQ(g.node(ar).attrs.get_str("group"), group);
    EXPECT_THAT(lg.groups, testing::Contains(Pair(group, rank < 4 ? ElementsAre(0, 1, 2, 3) : ElementsAre(4, 5, 6, 7))));
    ASSERT_EQ(lg.parameters.size(), 2u);
    EXPECT_EQ(lg.parameters[0].layout.replica_group(rank).size(), 2u);  // w's block is on 2 ranks (dp)
  }
}

TEST(LocalGraph, ARedistributedValueIsRedistributedOncePerLayout) {
  Graph g;
  GraphBuilder b(g);
  const Value x = b.input("x", {16, 8});
  const Value r = b.op("ReLU", {x}, {}, "r");
  const Value y = b.add(b.op("ReLU", {r}, {}, "a"), b.op("ReLU", {r}, {}, "c"));
  const GraphSharding gs = shard_graph(
      g, {b.reduce_sum(y).id},
      {{"r", OpStrategy{{{1, 8}}}}, {"a", OpStrategy{{{8, 1}}}}, {"c", OpStrategy{{{8, 1}}}}}, 8);
  const LocalGraph lg = build_local_graph(g, gs, 3);
  int all_to_all = 0;
  for (const Node& n : lg.graph.nodes()) all_to_all += n.op == "AlltoAll";
  EXPECT_EQ(all_to_all, 1);
}

TEST(ShardedParameter, ABlockEqualsTheSameBlockOfTheWholeParameter) {
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  const TensorLayout l = layout({"sp", "dp"}, "mp");
  Parameter whole({32, 20}, "xavier_uniform");
  whole.finalize("fc1.weight", 5);
  for (int rank = 0; rank < 8; ++rank) {
    Parameter p({32, 20}, "xavier_uniform");
    p.finalize("fc1.weight", 5);
    std::vector<int64_t> offset;
    for (const DimSlice& d : l.slice(p.shape(), rank)) offset.push_back(d.offset);
    p.shard(offset, l.local_shape(p.shape()));
    EXPECT_THAT(p.shape(), ElementsAre(32, 20));  // the network still sees the full shape
    const Tensor expected = local_block(whole.value(), l, rank);
    ASSERT_EQ(p.value().shape(), expected.shape());
    for (int64_t k = 0; k < expected.numel(); ++k) ASSERT_EQ(p.value().f32()[k], expected.f32()[k]) << rank;
    p.shard(offset, l.local_shape(p.shape()));  // again at the same block: nothing changes
    EXPECT_THROW(p.shard({0, 0}, {32, 20}), InvalidArgument);
  }
}

TEST(LocalBlock, RowBlocksAreViewsOtherBlocksCopies) {
  Tensor t({4, 6});
  for (int64_t k = 0; k < t.numel(); ++k) t.f32()[k] = static_cast<float>(k);
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  const Tensor rows = local_block(t, layout("dp", "None"), 4);  // dp = 1: rows 2..3
  EXPECT_EQ(rows.raw(), t.rows(2, 4).raw());
  const Tensor block = local_block(t, layout("mp", "sp"), 3);  // mp = 1, sp = 1: rows 2..3, cols 3..5
  EXPECT_THAT(std::vector<float>(block.f32(), block.f32() + 6), ElementsAre(15, 16, 17, 21, 22, 23));
}

}  // namespace
}  // namespace sf
