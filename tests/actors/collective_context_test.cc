// Where a Runtime finds the groups its collective nodes name: in RuntimeOptions::collectives
// first, else in the rank bound to the calling thread (comm/rank_context.h), so that code
// running under sf::comm::init() builds its Runtimes with no context at all.
#include <gtest/gtest.h>

#include <memory>

#include <shardflow/comm/rank_context.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_builder.h>
#include "tests/actors/collective_world.h"

namespace sf {
namespace {

TEST(CollectiveContext, ARuntimeOnARanksThreadFindsTheGroupsItCreated) {
  auto world = comm::make_inproc_world(3);
  std::vector<Tensor> sums(3);
  commtest::run_ranks(3, [&](int r) {
    auto rank = std::make_shared<comm::RankContext>(world[r], r);
    comm::RankBinding bind(rank);
    if (r == 2) return;  // not in the group
    const comm::Group pair = comm::create_group("pair", {0, 1});
    Graph g;
    GraphBuilder gb(g);
    const Value x = gb.input("x", {3});
    const Value y = CollectiveBuilder(gb, group_ref(pair)).all_reduce(x);
    Runtime rt(g, {y.id}, {});
    sums[r] = rt.run({{x.id, Tensor::full({3}, 1.0f + r)}})[0].clone();
  });
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(bitwise_equal(sums[r], Tensor::full({3}, 3.0f))) << "rank " << r;
}

TEST(CollectiveContext, AddRefusesAnUndefinedOrDuplicateGroup) {
  auto world = comm::make_inproc_world(1);
  CollectiveContext ctx = world_context(world[0]);
  EXPECT_THROW(ctx.add(comm::world_group(world[0])), InvalidArgument);
  EXPECT_THROW(ctx.add(comm::Group()), InvalidArgument);
  ASSERT_NE(ctx.find("world"), nullptr);
  EXPECT_EQ(ctx.find("world")->size(), 1);
  EXPECT_EQ(ctx.find("tp"), nullptr);
}

}  // namespace
}  // namespace sf
