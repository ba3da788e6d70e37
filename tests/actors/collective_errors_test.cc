// Collective nodes that cannot run: refused when the Runtime is built (a group this rank does
// not have, or of another size), or failing in the collective (a peer that never joins, a
// transfer of the wrong shape, a rank sending to itself), which reaches the caller of run()
// naming the node, as other op errors do.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <shardflow/comm/inproc/transport.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_builder.h>
#include "tests/actors/collective_world.h"

namespace sf {
namespace {

using actortest::run_world;
using actortest::with_collectives;

void expect_message(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one with '" << parts[0] << "'";
  } catch (const Error& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST(CollectiveErrors, AGroupTheContextLacksOrOfAnotherSizeIsRefusedWhenBuilt) {
  Graph g;
  GraphBuilder gb(g);
  const Value x = gb.input("x", {2});
  const Value y = CollectiveBuilder(gb, {"tp", 2}).all_reduce(x);
  const Value z = CollectiveBuilder(gb, {"world", 3}).all_gather(x);
  expect_message([&] { Runtime rt(g, {y.id}, {}); },
                 {"AllReduce 'AllReduce'", "group 'tp'", "neither RuntimeOptions::collectives nor the calling"});
  auto world = comm::make_inproc_world(2);
  expect_message([&] { Runtime rt(g, {z.id}, with_collectives(world_context(world[0]))); },
                 {"AllGather 'AllGather'", "built for group 'world' of size 3", "has size 2"});
}

TEST(CollectiveErrors, APeerThatNeverJoinsFailsTheStepNamingTheNodeAndTheRank) {
  const auto t0 = std::chrono::steady_clock::now();
  run_world(
      2,
      [&](int r, const CollectiveContext& ctx) {
        if (r == 1) return;  // rank 1 never runs its graph
        Graph g;
        GraphBuilder gb(g);
        const Value x = gb.input("x", {4});
        const Value y = CollectiveBuilder(gb, group_ref(ctx.groups.at("world"))).all_reduce(x);
        Runtime rt(g, {y.id}, with_collectives(ctx));
        expect_message([&] { rt.run({{x.id, Tensor({4})}}); }, {"AllReduce 'AllReduce'", "rank 1"});
        expect_message([&] { rt.run({{x.id, Tensor({4})}}); }, {"unusable after an op failed"});
      },
      std::chrono::milliseconds(300));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(CollectiveErrors, AReceiveOfTheWrongShapeNamesTheNode) {
  run_world(2, [&](int r, const CollectiveContext& ctx) {
    Graph g;
    GraphBuilder gb(g);
    CollectiveBuilder cb(gb, group_ref(ctx.groups.at("world")));
    if (r == 0) {
      const Value x = gb.input("x", {2, 3});
      const Value token = cb.send(x, 1, 1);
      Runtime rt(g, {token.id}, with_collectives(ctx));
      rt.run({{x.id, Tensor({2, 3})}});
    } else {
      const Value y = cb.receive(1, 0, {3, 2});
      Runtime rt(g, {y.id}, with_collectives(ctx));
      expect_message([&] { rt.run({}); }, {"Receive 'Receive'", "(2, 3)", "(3, 2)"});
    }
  });
}

TEST(CollectiveErrors, ARankSendingToItselfIsRefusedBeforeAnyMessage) {
  run_world(1, [&](int, const CollectiveContext& ctx) {
    Graph g;
    GraphBuilder gb(g);
    const Value x = gb.input("x", {2});
    const auto ys = CollectiveBuilder(gb, group_ref(ctx.groups.at("world")))
                        .neighbor_exchange({x}, {0}, {0}, {{2}}, {{2}});
    Runtime rt(g, {ys[0].id}, with_collectives(ctx));
    expect_message([&] { rt.run({{x.id, Tensor({2})}}); }, {"NeighborExchange 'NeighborExchange'", "this rank itself"});
  });
}

}  // namespace
}  // namespace sf
