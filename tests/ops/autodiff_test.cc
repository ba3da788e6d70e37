// Autodiff over the built-in ops: the MLP pattern differentiates only what the parameters need
// (no gradient MatMul for the input batch), and a value read twice sums both contributions.
#include <gtest/gtest.h>

#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::floats;
using optest::random_tensor;
using optest::run_graph;

struct Mlp {
  Value x, labels, w1, b1, w2, b2, loss;
};

// x (4, 6) -> Dense(5) -> ReLU -> Dense(3) -> SoftmaxCrossEntropy, weights stored (out, in).
Mlp build_mlp(GraphBuilder& gb) {
  Mlp m;
  m.x = gb.input("x", {4, 6});
  m.labels = gb.input("labels", {4}, DType::kI32);
  m.w1 = gb.parameter("fc1.weight", {5, 6});
  m.b1 = gb.parameter("fc1.bias", {5});
  m.w2 = gb.parameter("fc2.weight", {3, 5});
  m.b2 = gb.parameter("fc2.bias", {3});
  gb.push_scope("fc1");
  Value h = gb.relu(gb.bias_add(gb.matmul(m.x, m.w1, false, true), m.b1));
  gb.pop_scope();
  gb.push_scope("fc2");
  Value logits = gb.bias_add(gb.matmul(h, m.w2, false, true), m.b2);
  gb.pop_scope();
  m.loss = gb.softmax_cross_entropy(logits, m.labels);
  return m;
}

TEST(Autodiff, MlpGetsParameterGradientsOnly) {
  Graph g;
  GraphBuilder gb(g);
  const Mlp m = build_mlp(gb);
  const int forward_nodes = g.size();
  const std::vector<int> grads = gradients(g, m.loss.id, {m.w1.id, m.b1.id, m.w2.id, m.b2.id});

  int matmuls = 0;
  for (const Node& n : g.nodes()) {
    matmuls += n.op == "MatMul";
    if (n.id < forward_nodes) continue;
    // dx = dh1 @ w1 would be the only backward node to read fc1.weight.
    for (int i : n.inputs) EXPECT_NE(i, m.w1.id) << n.name << " computes a gradient of the input batch";
    EXPECT_EQ(n.name.find("Gradients/x"), std::string::npos) << n.name;
  }
  EXPECT_EQ(matmuls, 2 + 3);  // forward 2; backward dW2, dH1, dW1
  const Shape want[] = {{5, 6}, {5}, {3, 5}, {3}};
  for (size_t k = 0; k < grads.size(); ++k) EXPECT_EQ(g.node(grads[k]).shape, want[k]);
}

TEST(Autodiff, MlpGradientsMatchFiniteDifferences) {
  Graph g;
  GraphBuilder gb(g);
  const Mlp m = build_mlp(gb);
  EXPECT_TRUE(check_gradients(g, m.loss.id,
                              {{m.x.id, random_tensor({4, 6}, 1)},
                               {m.labels.id, Tensor::from_vector({4}, std::vector<int32_t>{0, 2, 1, 2})},
                               {m.w1.id, random_tensor({5, 6}, 2)},
                               {m.b1.id, random_tensor({5}, 3, -0.1f, 0.1f)},
                               {m.w2.id, random_tensor({3, 5}, 4)},
                               {m.b2.id, random_tensor({3}, 5)}},
                              {m.w1.id, m.b1.id, m.w2.id, m.b2.id}));
}

TEST(Autodiff, ValueUsedTwiceAccumulatesBothContributions) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {3});
  Value loss = gb.reduce_sum(gb.mul(x, x));
  const int dx = gradients(g, loss.id, {x.id})[0];
  EXPECT_EQ(g.node(dx).op, "Add") << "the two contributions of Mul(x, x) are summed";
  const Tensor v = floats({3}, {1.f, -2.f, 0.5f});
  EXPECT_EQ(run_graph(g, {dx}, {{x.id, v}})[0].to_vector(), (std::vector<float>{2, -4, 1}));  // d x^2 = 2x
}

TEST(Autodiff, UnrelatedParameterGetsZeros) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2}), unused = gb.parameter("unused", {4});
  Value loss = gb.reduce_sum(x);
  const int du = gradients(g, loss.id, {unused.id})[0];
  EXPECT_EQ(run_graph(g, {du}, {})[0].to_vector(), (std::vector<float>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace sf
