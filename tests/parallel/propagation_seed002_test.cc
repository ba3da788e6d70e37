// Sharding propagation on seed 002's network: only matmul is sharded ((2,4),(4,1)); relu gets
// ((2,4),) and matmul2 ((2,4),(4,1)), as the seed's IR dump shows, each with the neighbour it
// came from and the costs compared; the loss follows. A network with no annotation is data
// parallel throughout.
#include <gtest/gtest.h>

#include <shardflow/parallel/propagation/sharding_propagation.h>
#include "propagation_world.h"

namespace sf::paralleltest {
namespace {

TEST(PropagationSeed002, ReluAndMatmul2GetTheStrategiesOfTheSeedsIr) {
  Seed002Net net;
  net.matmul.shard({{2, 4}, {4, 1}});
  auto gg = global_graph(net, NetKind::kSeed002);
  const StrategySearch s = propagate_strategies(gg->g, {gg->loss}, net.strategies(), 8);
  EXPECT_EQ(s.table.at(node_of(net.matmul)).str(), "in_strategy ((2,4), (4,1))");
  EXPECT_EQ(s.table.at(node_of(net.relu)).str(), "in_strategy ((2,4),)");
  EXPECT_EQ(s.table.at(node_of(net.matmul2)).str(), "in_strategy ((2,4), (4,1))");

  const StrategyDecision* relu = s.find(node_of(net.relu));
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->reason, DecisionReason::kPropagated);
  EXPECT_EQ(relu->from, node_of(net.matmul));
  EXPECT_TRUE(relu->forward);
  EXPECT_EQ(relu->bytes, 0);
  const StrategyDecision* matmul2 = s.find(node_of(net.matmul2));
  ASSERT_NE(matmul2, nullptr);
  EXPECT_EQ(matmul2->from, node_of(net.relu));
  EXPECT_GT(matmul2->candidates, 1);
  EXPECT_GT(matmul2->compared.back().bytes, 0);  // the others would redistribute relu's output

  const std::string text = s.explain();
  EXPECT_NE(text.find("relu/ReLU (ReLU): in_strategy ((2,4),) — propagated forward from matmul/MatMul"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("matmul/MatMul (MatMul): in_strategy ((2,4), (4,1)) — given by shard()"), std::string::npos)
      << text;
}

TEST(PropagationSeed002, NoAnnotationIsDataParallelEverywhere) {
  Seed002Net net;
  auto gg = global_graph(net, NetKind::kSeed002);
  const StrategySearch s = propagate_strategies(gg->g, {gg->loss}, net.strategies(), 8);
  for (const StrategyDecision& d : s.decisions) {
    EXPECT_EQ(d.reason, DecisionReason::kDataParallel) << d.op;
    EXPECT_EQ(d.strategy.in[0].tuple()[0], 8) << d.op;
  }
  EXPECT_EQ(s.table.at(node_of(net.matmul2)).str(), "in_strategy ((8,1), (1,1))");
}

}  // namespace
}  // namespace sf::paralleltest
