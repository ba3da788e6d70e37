// The cost-model search (search_mode "dynamic_programming"): on a wide MatMul chain with a
// small batch, where splitting the weights avoids AllReducing their gradients, its choice moves
// no more bytes per rank than any hand-written strategy here and shards the weights; a memory
// limit it cannot meet is refused naming the least it found; a network trained with the
// strategies it finds equals 1 device.
#include <gtest/gtest.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include <shardflow/parallel/auto_search.h>
#include <shardflow/parallel/step_estimate.h>
#include "propagation_world.h"

namespace sf::paralleltest {
namespace {

// x (8, 64) -> matmul1 (64, 512) -> relu -> matmul2 (512, 64) -> MSE against (8, 64).
struct WideChain {
  Graph g;
  int loss = -1;
  WideChain() {
    GraphBuilder b(g);
    const Value h = b.relu(b.op("MatMul", {b.input("x", {8, 64}), b.parameter("w1", {64, 512})}, {}, "matmul1"));
    const Value y = b.op("MatMul", {h, b.parameter("w2", {512, 64})}, {}, "matmul2");
    loss = b.mse_loss(y, b.input("target", {8, 64})).id;
  }
  double bytes(const StrategyTable& t) const {
    return estimate_step(g, shard_graph(g, {loss}, t, 8)).communication_bytes();
  }
};

AutoSearchOptions full_batch() {
  AutoSearchOptions o;
  o.dataset_strategy = "full_batch";
  return o;
}

TEST(AutoSearch, WideChainMovesNoMoreBytesThanAnyHandWrittenStrategy) {
  const WideChain c;
  const StrategySearch s = search_auto(c.g, {c.loss}, {}, 8, full_batch());
  const double searched = c.bytes(s.table);
  EXPECT_DOUBLE_EQ(s.estimate_bytes, searched);
  const std::vector<StrategyTable> hand = {
      {},                                                                      // data parallel
      {{"matmul1", OpStrategy{{{1, 1}, {1, 8}}}}, {"matmul2", OpStrategy{{{1, 8}, {8, 1}}}}},  // Megatron
      {{"matmul1", OpStrategy{{{1, 8}, {8, 1}}}}, {"matmul2", OpStrategy{{{1, 8}, {8, 1}}}}},
      {{"matmul1", OpStrategy{{{2, 1}, {1, 4}}}}, {"matmul2", OpStrategy{{{2, 4}, {4, 1}}}}},
      {{"matmul1", OpStrategy{{{1, 1}, {1, 8}}}}, {"matmul2", OpStrategy{{{8, 1}, {1, 1}}}}},
  };
  for (const StrategyTable& t : hand) {
    std::string name;
    for (const auto& [op, st] : t) name += op + " " + st.str() + "; ";
    EXPECT_LE(searched, c.bytes(t)) << "hand-written: " << name << "\n" << s.explain();
  }
  EXPECT_LT(searched, c.bytes({}) / 2) << s.explain();  // far below data parallel's gradient AllReduce
  EXPECT_NE(s.table.at("matmul1").in[1].tuple(), (Strategy{1, 1})) << s.explain();  // w1 is split
  EXPECT_NE(s.explain().find("chosen by the cost model"), std::string::npos);
}

TEST(AutoSearch, AMemoryLimitNothingMeetsIsRefused) {
  const WideChain c;
  AutoSearchOptions o = full_batch();
  o.memory_limit_bytes = 64;
  EXPECT_THROW(search_auto(c.g, {c.loss}, {}, 8, o), InvalidArgument);
  o.memory_limit_bytes = 1 << 20;
  const StrategySearch s = search_auto(c.g, {c.loss}, {}, 8, o);
  EXPECT_LE(s.estimate_memory, o.memory_limit_bytes);
}

TEST(AutoSearch, Seed001NetworkTrainedWithTheSearchedStrategiesEqualsOneDevice) {
  const Case c = make_case<Seed001Net>("seed001_searched", [](Seed001Net&) {});
  AutoParallelContext ctx;
  ctx.parallel_mode = ParallelMode::kAutoParallel;
  ctx.search_mode = "dynamic_programming";
  expect_equivalent(train(c, kWorld, ctx), one_device(c));
}

}  // namespace
}  // namespace sf::paralleltest
