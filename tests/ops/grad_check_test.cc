// The gradient checker itself: it must catch a wrong rule, and say where, or its passes mean
// nothing.
#include "tests/ops/grad_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include <shardflow/ops/op_def.h>

namespace sf {
namespace {

// out = 2x with the gradient rule "dx = dout", off by a factor of 2.
void register_wrong_double() {
  OpRegistry& r = OpRegistry::global();
  if (r.contains("TestWrongDouble")) return;
  r.add({.name = "TestWrongDouble",
         .arity = 1,
         .infer = [](const Node&, const std::vector<const Node*>& in) { return TypeInfo{in[0]->shape, in[0]->dtype}; },
         .forward =
             [](const Node&, const std::vector<Tensor>& in, Tensor& out) {
               for (int64_t i = 0; i < out.numel(); ++i) out.f32()[i] = 2 * in[0].f32()[i];
             },
         .grad = [](GradContext&, const Node&, int dout) { return std::vector<int>{dout}; }});
}

TEST(GradCheck, CatchesAWrongRuleAndNamesTheElement) {
  register_wrong_double();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 2});
  Value y = gb.op("TestWrongDouble", {x});
  const ::testing::AssertionResult r = optest::check_gradients(g, y.id, {{x.id, optest::random_tensor({2, 2}, 1)}}, {x.id});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.message(), ::testing::AllOf(::testing::HasSubstr("d loss / d x(0, 0)"), ::testing::HasSubstr("analytic"),
                                            ::testing::HasSubstr("numeric")));
}

}  // namespace
}  // namespace sf
