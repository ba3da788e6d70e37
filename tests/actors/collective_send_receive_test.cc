// Send and Receive in graphs on two virtual ranks, forward and backward: rank 0 sends x, rank
// 1 receives it and takes L = <y, c>. Autodiff on rank 0 (whose loss is the Send's token)
// emits the Receive of dL/dx, on rank 1 the Send of dL/dy = c, so rank 0's gradient is rank
// 1's c exactly, over several steps.
#include <gtest/gtest.h>

#include <vector>

#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_builder.h>
#include "tests/actors/collective_world.h"

namespace sf {
namespace {

using actortest::run_world;
using actortest::with_collectives;

Tensor values(const Shape& s, float base) {
  Tensor t(s);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = base + 0.25f * static_cast<float>(i);
  return t;
}

TEST(CollectiveSendReceive, GradientsTravelBackToTheSender) {
  constexpr int kSteps = 3;
  constexpr int64_t kTag = 9;
  std::vector<std::vector<Tensor>> got(2);
  run_world(2, [&](int r, const CollectiveContext& ctx) {
    Graph g;
    GraphBuilder gb(g);
    CollectiveBuilder cb(gb, group_ref(ctx.groups.at("world")));
    if (r == 0) {
      const Value x = gb.input("x", {2, 3});
      const Value token = cb.send(x, kTag, 1);
      const int dx = gradients(g, token.id, {x.id})[0];
      Runtime rt(g, {token.id, dx}, with_collectives(ctx));
      for (int step = 0; step < kSteps; ++step) {
        const auto& out = rt.run({{x.id, values({2, 3}, static_cast<float>(step))}});
        got[0].push_back(out[0].clone());
        got[0].push_back(out[1].clone());
      }
    } else {
      const Value p = gb.input("p", {1});  // the Receive's virtual input
      const Value c = gb.input("c", {2, 3});
      const Value y = cb.receive(kTag, 0, {2, 3}, DType::kF32, p);
      const Value loss = gb.reduce_sum(gb.mul(y, c));
      const int dp = gradients(g, loss.id, {p.id})[0];
      Runtime rt(g, {y.id, dp}, with_collectives(ctx));
      for (int step = 0; step < kSteps; ++step) {
        const auto& out = rt.run({{p.id, Tensor::full({1}, 5.0f)}, {c.id, values({2, 3}, 100.0f + step)}});
        got[1].push_back(out[0].clone());
        got[1].push_back(out[1].clone());
      }
    }
  });
  for (int step = 0; step < kSteps; ++step) {
    EXPECT_EQ(got[0][2 * step].item(), 0.0f) << "the Send's token";
    EXPECT_TRUE(bitwise_equal(got[1][2 * step], values({2, 3}, static_cast<float>(step)))) << "step " << step;
    EXPECT_TRUE(bitwise_equal(got[0][2 * step + 1], values({2, 3}, 100.0f + step)))
        << "step " << step << ": d L / d x on rank 0 is rank 1's c";
    EXPECT_TRUE(bitwise_equal(got[1][2 * step + 1], Tensor::zeros({1}))) << "the virtual input's gradient";
  }
}

}  // namespace
}  // namespace sf
