// Auto parallel with sharding propagation equals 1 device: seed 002's network as the seed
// shards it, and networks with a few ops annotated (forward, backward and both ways from the
// annotation; annotations whose neighbours disagree, resolved by redistribution; layouts;
// full_batch) or none at all, train for 20 steps on 8 virtual ranks with every rank's loss at
// every step within 1e-5 relative of the 1-device run's and its parameter blocks equal.
#include <gtest/gtest.h>

#include "propagation_world.h"

namespace sf::paralleltest {
namespace {

struct AutoCase {
  Case c;
  std::string dataset_strategy = "data_parallel";
};

void PrintTo(const AutoCase& a, std::ostream* os) { *os << a.c.name; }

AutoParallelContext propagation(const std::string& dataset_strategy) {
  AutoParallelContext ctx;
  ctx.parallel_mode = ParallelMode::kAutoParallel;
  ctx.search_mode = "sharding_propagation";
  ctx.dataset_strategy = dataset_strategy;
  return ctx;
}

class PropagationEquivalence : public ::testing::TestWithParam<AutoCase> {};

TEST_P(PropagationEquivalence, LossPerStepAndParameterBlocksEqualOneDevice) {
  const AutoCase& a = GetParam();
  expect_equivalent(train(a.c, kWorld, propagation(a.dataset_strategy)), one_device(a.c));
}

using C = ClassifierNet;
using T = TransposedNet;
using R = ReshapeReduceNet;
using S1 = Seed001Net;
using S2 = Seed002Net;
const Layout kMesh({2, 2, 2}, {"dp", "sp", "mp"});

std::vector<AutoCase> cases() {
  return {
      {make_case<S2>("seed002_matmul_only", [](S2& n) { n.matmul.shard({{2, 4}, {4, 1}}); }, "momentum")},
      {make_case<S2>("seed002_no_annotation", [](S2&) {}, "momentum")},
      {make_case<S2>("seed002_matmul2_only_backward", [](S2& n) { n.matmul2.shard({{1, 8}, {8, 1}}); }, "momentum")},
      {make_case<C>("classifier_matmul1_seed002_strategy", [](C& n) { n.matmul1.shard({{2, 4}, {4, 1}}); })},
      {make_case<C>("classifier_relu1_column_split", [](C& n) { n.relu1.shard({{1, 8}}); })},
      {make_case<C>("classifier_neighbours_disagree",
                    [](C& n) {
                      n.matmul1.shard({{1, 8}, {8, 1}});
                      n.bias1.shard({{8, 1}, {1}});
                      n.matmul3.shard({{2, 2}, {2, 2}});
                    })},
      {make_case<C>("classifier_matmul2_full_batch", [](C& n) { n.matmul2.shard({{2, 4}, {1, 4}}); }), "full_batch"},
      {make_case<T>("transposed_matmul_tt_all_dims", [](T& n) { n.matmul_tt.shard({{2, 2}, {2, 2}}); })},
      {make_case<T>("transposed_relu2_row_split", [](T& n) { n.relu2.shard({{4, 2}}); })},
      {make_case<R>("reshape_reduce_matmul1_column", [](R& n) { n.matmul1.shard({{2, 1}, {1, 4}}); })},
      {make_case<R>("reshape_reduce_no_annotation", [](R&) {})},
      {make_case<S1>("seed001_matmul1_layout_reducescatter",
                     [](S1& n) {
                       n.matmul1.shard({kMesh("mp", {"sp", "dp"}), kMesh({"sp", "dp"}, "None")},
                                       {kMesh({"mp", "sp", "dp"}, "None")});
                     })},
      {make_case<S1>("seed001_relu_and_matmul_disagree",
                     [](S1& n) {
                       n.relu1.shard({{8, 1}});
                       n.matmul2.shard({{1, 8}, {8, 1}});
                     })},
  };
}

INSTANTIATE_TEST_SUITE_P(Strategies, PropagationEquivalence, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.c.name; });

}  // namespace
}  // namespace sf::paralleltest
