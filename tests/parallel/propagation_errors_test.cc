// Bad input under sharding propagation: an annotation that disagrees with its neighbours'
// fixed strategies is no error — shard_graph inserts the redistribution between them and the
// explanation shows the choice — while a strategy invalid in itself is refused with
// shard_op's message, before anything runs; so is an unknown search mode.
#include <gtest/gtest.h>

#include <shardflow/core/error.h>
#include <shardflow/parallel/propagation/sharding_propagation.h>
#include <shardflow/parallel/sharding/graph_sharding.h>
#include "propagation_world.h"

namespace sf::paralleltest {
namespace {

TEST(PropagationErrors, NeighboursThatDisagreeAreJoinedByRedistribution) {
  Seed001Net net;
  net.relu1.shard({{8, 1}});
  net.matmul2.shard({{1, 8}, {8, 1}});
  auto gg = global_graph(net, NetKind::kSeed001);
  const StrategySearch s = propagate_strategies(gg->g, {gg->loss}, net.strategies(), 8);
  const GraphSharding gs = shard_graph(gg->g, {gg->loss}, s.table, 8);
  const NodeSharding& m2 = gs.at(gg->g.find(node_of(net.matmul2)));
  ASSERT_FALSE(m2.in_plans.empty());
  EXPECT_FALSE(m2.in_plans[0].steps.empty());  // relu1's rows to matmul2's columns: an AlltoAll
  EXPECT_GT(m2.in_plans[0].bytes(), 0);
  EXPECT_EQ(s.find(node_of(net.relu1))->reason, DecisionReason::kGiven);
  EXPECT_EQ(s.find(node_of(net.matmul2))->reason, DecisionReason::kGiven);
  EXPECT_NE(s.explain().find("given by shard()"), std::string::npos);
}

TEST(PropagationErrors, AStrategyInvalidInItselfIsRefusedAsInSemiAuto) {
  Seed002Net net;
  net.matmul.shard({{3, 1}, {1, 1}});  // 3 does not divide the batch of 16, nor 8 devices
  auto gg = global_graph(net, NetKind::kSeed002);
  try {
    propagate_strategies(gg->g, {gg->loss}, net.strategies(), 8);
    FAIL() << "not refused";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("MatMul 'matmul/MatMul'"), std::string::npos) << e.what();
  }
  Seed002Net reduce;
  reduce.matmul.shard({{2, 4}, {2, 1}});  // the inputs split the reduce dim differently
  auto g2 = global_graph(reduce, NetKind::kSeed002);
  EXPECT_THROW(propagate_strategies(g2->g, {g2->loss}, reduce.strategies(), 8), InvalidArgument);
}

TEST(PropagationErrors, UnknownSearchModeOrDatasetStrategyIsRefused) {
  AutoParallelContext ctx;
  ctx.parallel_mode = ParallelMode::kAutoParallel;
  ctx.search_mode = "recursive_programming";
  EXPECT_THROW(set_auto_parallel_context(ctx), InvalidArgument);
  ctx.search_mode = "sharding_propagation";
  ctx.dataset_strategy = "half_batch";
  EXPECT_THROW(set_auto_parallel_context(ctx), InvalidArgument);
  reset_auto_parallel_context();
}

}  // namespace
}  // namespace sf::paralleltest
