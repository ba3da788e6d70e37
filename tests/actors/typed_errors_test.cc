// Errors reach the caller of Runtime::run / run_steps as the type that was thrown: a peer lost
// inside a collective is a PeerLost naming that rank (and the node), a kernel's InvalidArgument
// stays one and names its op once, and an error in the caller's own next()/done() keeps its
// type too (core/error_context.h).
#include <gtest/gtest.h>

#include <string>

#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_builder.h>
#include "tests/actors/collective_world.h"

namespace sf {
namespace {

using actortest::run_world;
using actortest::with_collectives;

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

TEST(TypedErrors, APeerLostInACollectiveIsAPeerLostNamingTheRankAndTheNode) {
  run_world(
      3,
      [&](int r, const CollectiveContext& ctx) {
        if (r == 2) return;  // rank 2 never runs its graph
        Graph g;
        GraphBuilder gb(g);
        const Value x = gb.input("x", {4});
        const Value y = CollectiveBuilder(gb, group_ref(ctx.groups.at("world"))).all_reduce(x);
        Runtime rt(g, {y.id}, with_collectives(ctx));
        try {
          rt.run({{x.id, Tensor({4})}});
          ADD_FAILURE() << "rank " << r << ": no error";
        } catch (const PeerLost& e) {
          EXPECT_EQ(e.rank(), 2) << e.what();
          EXPECT_EQ(count_of(e.what(), "AllReduce 'AllReduce'"), 1u) << e.what();
        } catch (const std::exception& e) {
          ADD_FAILURE() << "rank " << r << ": not a PeerLost: " << e.what();
        }
      },
      std::chrono::milliseconds(300));
}

TEST(TypedErrors, AKernelErrorKeepsItsTypeAndNamesTheOpOnce) {
  Graph g;
  GraphBuilder gb(g);
  const Value logits = gb.input("logits", {2, 3});
  const Value labels = gb.input("labels", {2}, DType::kI32);
  const Value loss = gb.softmax_cross_entropy(logits, labels);
  const std::string label = node_label(g.node(loss.id));
  Runtime rt(g, {loss.id}, {.threads = 2});
  try {
    rt.run({{logits.id, Tensor({2, 3})}, {labels.id, Tensor::from_vector({2}, std::vector<int32_t>{0, 7})}});
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(count_of(e.what(), label), 1u) << e.what();
    EXPECT_NE(std::string(e.what()).find("label 7 of row 1 is out of range [0, 3)"), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InvalidArgument: " << e.what();
  }
}

TEST(TypedErrors, AnErrorInTheCallersDoneKeepsItsType) {
  Graph g;
  GraphBuilder gb(g);
  const Value x = gb.input("x", {2});
  const Value y = gb.relu(x);
  Runtime rt(g, {y.id}, {});
  int steps = 0;
  try {
    rt.run_steps(
        [&](Runtime::Feeds& feeds) {
          feeds.emplace_back(x.id, Tensor({2}));
          return steps < 3;
        },
        [&](const std::vector<Tensor>&) {
          if (++steps == 2) throw IoError("checkpoint 'x.ckpt': disk full");
        });
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "checkpoint 'x.ckpt': disk full");
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an IoError: " << e.what();
  }
}

}  // namespace
}  // namespace sf
