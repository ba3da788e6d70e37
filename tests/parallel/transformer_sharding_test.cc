// Semi-auto parallel of the transformer ops (GeLU, LayerNorm, Softmax, Transpose, BatchMatMul)
// equals 1 device:
//   - a small block on (batch 8, sequence 4, hidden 16) — scale, LayerNorm, GeLU, scale,
//     Softmax, a sum of squared errors — trains 12 steps on 8 virtual ranks under strategies that split the leading
//     dims of each op, split every dim of GeLU, and split LayerNorm's normalized dim and
//     Softmax's axis (gathered before the op); every rank's loss per step equals the 1-device
//     run's and every parameter block the 1-device block;
//   - the splits of the normalized dim and of the softmax axis are really asked for and really
//     gathered: the ops take x whole on that dim;
//   - with the batch split, LayerNorm's gamma and beta gradients (each rank's rows' share,
//     summed over the replicas) equal 1 device's, through value_and_grad on 4 ranks;
//   - self-attention (Reshape and Transpose into heads, BatchMatMul, Softmax, BatchMatMul,
//     Transpose and Reshape back) trains on 8 ranks equal to 1 device under splits of every
//     dim of the Transposes, of BatchMatMul's batch, rows, columns and reduce dim (partial sums
//     resolved by AllReduce or ReduceScatter) and of Softmax's heads;
//   - the rules' layouts: gamma and beta replicated over a leading split, LayerNormGammaGrad's
//     output partial over it, the normalized dim and softmax axis whole, Transpose's splits
//     moved by the permutation, BatchMatMul's reduce split partial.
#include <gtest/gtest.h>

#include "tests/parallel/train_against_one_device.h"

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/parallel/sharding/op_sharding.h>
#include <shardflow/train/semi_auto_step.h>
#include <shardflow/train/value_and_grad.h>
#include "tests/train/parallel_fixture.h"

namespace sf::paralleltest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace transformer_sharding_test {

constexpr int64_t kBatch = 8, kSeq = 4, kHidden = 16;
constexpr int64_t kSteps = 12;
constexpr uint64_t kSeed = 31;
constexpr int kWorld = 8;

// x -> x * s -> LayerNorm(gamma, beta) -> GeLU -> * w -> Softmax over the hidden dim. Every op
// is a Primitive so that a case can shard it; s and w have a gradient through every op.
class Block : public nn::Cell {
 public:
  static constexpr float kLr = 0.5f;  // SGD's
  Parameter& s = register_parameter("s", {kHidden}, "uniform");
  Parameter& gamma = register_parameter("gamma", {kHidden}, "uniform");
  Parameter& beta = register_parameter("beta", {kHidden}, "uniform");
  Parameter& w = register_parameter("w", {kHidden}, "xavier_uniform");
  Primitive& scale_in = register_primitive("scale_in", "Mul");
  Primitive& norm = register_primitive("norm", "LayerNorm");
  Primitive& act = register_primitive("act", "GeLU", {{"approximate", std::string("tanh")}});
  Primitive& scale_out = register_primitive("scale_out", "Mul");
  Primitive& softmax = register_primitive("softmax", "Softmax", {{"axis", int64_t{-1}}});

  Value construct(GraphBuilder& b, Value x) override {
    const Value h = norm(b, {scale_in(b, {x, param(b, s)}), param(b, gamma), param(b, beta)});
    return softmax(b, {scale_out(b, {act(b, {h}), param(b, w)})});
  }
};

// Row i: x (kSeq, kHidden) normal with a per-row offset (so LayerNorm has a mean to remove) and
// a target of the same shape, uniform in [0, 0.2) like a softmax's values.
std::vector<Tensor> row(int64_t i) {
  Tensor x({kSeq, kHidden}), t({kSeq, kHidden});
  for (int64_t k = 0; k < x.numel(); ++k)
    x.f32()[k] = 2.0f * normal_at(kSeed, 0, static_cast<uint64_t>(i * x.numel() + k)) + 0.5f * (i % 3);
  for (int64_t k = 0; k < t.numel(); ++k)
    t.f32()[k] = 0.2f * uniform_at(kSeed, 1, static_cast<uint64_t>(i * t.numel() + k));
  return {x, t};
}

dataset::Dataset batches() { return dataset::Dataset::generator(row, kSteps * kBatch, {"x", "target"}).batch(kBatch); }

// Single-head-pair self-attention without projections, on the same data: q, k, v are x scaled
// by wq, wk, wv, split into 2 heads of 8 (Reshape, Transpose (0,2,1,3)), then
// softmax(q k^T) v per head (BatchMatMul with transpose_b, Softmax, BatchMatMul), and the heads
// merged back (Transpose, Reshape) to (batch, sequence, hidden).
constexpr int64_t kHeads = 2, kHeadDim = kHidden / kHeads;

class Attention : public nn::Cell {
 public:
  // SGD's: the scores are sums of 8 products of inputs of spread 2, and their gradients reach
  // hundreds, so a larger step diverges.
  static constexpr float kLr = 1e-3f;
  // Not xavier_uniform, which starts a vector at 0: k = 0 would leave q without a gradient.
  Parameter& wq = register_parameter("wq", {kHidden}, "ones");
  Parameter& wk = register_parameter("wk", {kHidden}, "uniform");
  Parameter& wv = register_parameter("wv", {kHidden}, "ones");
  Primitive& scale_q = register_primitive("scale_q", "Mul");
  Primitive& scale_k = register_primitive("scale_k", "Mul");
  Primitive& scale_v = register_primitive("scale_v", "Mul");
  Primitive& split_q = split("split_q");
  Primitive& split_k = split("split_k");
  Primitive& split_v = split("split_v");
  Primitive& heads_q = heads("heads_q");
  Primitive& heads_k = heads("heads_k");
  Primitive& heads_v = heads("heads_v");
  Primitive& scores = register_primitive("scores", "BatchMatMul", {{"transpose_b", int64_t{1}}});
  Primitive& softmax = register_primitive("softmax", "Softmax");
  Primitive& context = register_primitive("context", "BatchMatMul");
  Primitive& merge = heads("merge");
  Primitive& join = register_primitive("join", "Reshape", {{"shape", Shape{kBatch, kSeq, kHidden}}});

  Value construct(GraphBuilder& b, Value x) override {
    const Value q = heads_q(b, {split_q(b, {scale_q(b, {x, param(b, wq)})})});  // (B, heads, S, D)
    const Value k = heads_k(b, {split_k(b, {scale_k(b, {x, param(b, wk)})})});
    const Value v = heads_v(b, {split_v(b, {scale_v(b, {x, param(b, wv)})})});
    const Value weights = softmax(b, {scores(b, {q, k})});  // (B, heads, S, S)
    return join(b, {merge(b, {context(b, {weights, v})})});
  }

 private:
  Primitive& split(const std::string& name) {
    return register_primitive(name, "Reshape", {{"shape", Shape{kBatch, kSeq, kHeads, kHeadDim}}});
  }
  Primitive& heads(const std::string& name) {
    return register_primitive(name, "Transpose", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  }
};

// Per op node, the blocks of x's last dim the op takes.
using TakenSplits = std::map<std::string, int64_t>;

TakenSplits taken_splits(const SemiAutoProgram& sp, int /*rank*/) {
  TakenSplits taken;
  for (const auto& [id, ns] : sp.sharding.by_node) {
    if (!ns.op) continue;
    const Node& n = sp.global.node(id);
    const int last = static_cast<int>(sp.global.node(n.inputs[0]).shape.size()) - 1;
    taken[n.name] = ns.op->inputs[0].splits(last);
  }
  return taken;
}

// Model::train of a fresh Net with SGD at Net::kLr on the sum of squared errors (the softmax's values are small,
// and a mean square error's gradients, 1/512 of these, would barely move the parameters); every parameter block
// within 2e-5 of 1 device's (Block's w, the parameter that moves least, moves 3.5e-3).
template <class Net>
const TrainAgainstOneDevice<Net, TakenSplits>& against_one_device() {
  static const TrainAgainstOneDevice<Net, TakenSplits> harness({
      .seed = kSeed,
      .steps = kSteps,
      .lr = Net::kLr,
      .batches = batches,
      .loss = [](Net&) { return std::make_shared<SquaredErrorSum>(); },
      .tolerance = 2e-5f,
      .inspect = taken_splits,
  });
  return harness;
}

template <class Net>
StrategyCase make_case(std::string name, Shard<Net> shard) {
  return {std::move(name), [shard] {
            const auto& h = against_one_device<Net>();
            h.expect_equals_one_device(h.train(kWorld, shard));
          }};
}

class TransformerOpsSemiAuto : public ::testing::TestWithParam<StrategyCase> {};

TEST_P(TransformerOpsSemiAuto, LossPerStepAndParameterBlocksEqualOneDevice) { GetParam().check(); }

// clang-format off
std::vector<StrategyCase> cases() {
  using B = Block;
  using A = Attention;
  return {
      make_case<B>("all_default_batch_split", [](B&) {}),
      make_case<B>("layer_norm_batch_split", [](B& n) { n.norm.shard({{8, 1, 1}, {1}, {1}}); }),
      make_case<B>("layer_norm_batch_and_sequence_split", [](B& n) { n.norm.shard({{2, 4, 1}, {1}, {1}}); }),
      make_case<B>("layer_norm_repeated", [](B& n) { n.norm.shard({{2, 1, 1}, {1}, {1}}); }),
      make_case<B>("layer_norm_hidden_split_gathered", [](B& n) { n.norm.shard({{2, 1, 4}, {4}, {4}}); }),
      make_case<B>("gelu_every_dim_split", [](B& n) { n.act.shard({{2, 2, 2}}); }),
      make_case<B>("gelu_hidden_split", [](B& n) { n.act.shard({{1, 1, 8}}); }),
      make_case<B>("softmax_batch_and_sequence_split", [](B& n) { n.softmax.shard({{4, 2, 1}}); }),
      make_case<B>("softmax_axis_split_gathered", [](B& n) { n.softmax.shard({{1, 1, 8}}); }),
      make_case<B>("softmax_axis_and_batch_split_gathered", [](B& n) { n.softmax.shard({{2, 2, 2}}); }),
      make_case<B>("every_op_differently", [](B& n) {
        n.scale_in.shard({{1, 1, 8}, {8}});
        n.norm.shard({{4, 2, 1}, {1}, {1}});
        n.act.shard({{1, 4, 2}});
        n.scale_out.shard({{2, 1, 4}, {4}});
        n.softmax.shard({{1, 4, 2}});
      }),
      make_case<A>("attention_all_default_batch_split", [](A&) {}),
      // (B, S, heads, D) -> (B, heads, S, D): the splits follow their dims through the permutation.
      make_case<A>("transpose_every_dim_split", [](A& n) { n.heads_q.shard({{2, 1, 2, 2}}); }),
      make_case<A>("transpose_heads_split", [](A& n) { n.heads_v.shard({{1, 4, 2, 1}}); }),
      make_case<A>("transpose_back_sequence_split", [](A& n) { n.merge.shard({{2, 1, 4, 1}}); }),
      make_case<A>("batch_matmul_batch_and_heads_split", [](A& n) { n.scores.shard({{4, 2, 1, 1}, {4, 2, 1, 1}}); }),
      make_case<A>("batch_matmul_rows_and_columns_split", [](A& n) { n.scores.shard({{1, 1, 4, 1}, {1, 1, 2, 1}}); }),
      // k split: each rank's product is partial over its block of the head dim, then AllReduce.
      make_case<A>("batch_matmul_transpose_b_reduce_split", [](A& n) { n.scores.shard({{2, 1, 1, 4}, {2, 1, 1, 4}}); }),
      make_case<A>("batch_matmul_reduce_split", [](A& n) { n.context.shard({{1, 2, 1, 4}, {1, 2, 4, 1}}); }),
      make_case<A>("batch_matmul_reduce_split_reducescatter",
                   [](A& n) { n.context.shard({{2, 1, 1, 4}, {2, 1, 4, 1}}, {{8, 1, 1, 1}}); }),
      make_case<A>("attention_softmax_heads_and_keys_split", [](A& n) { n.softmax.shard({{2, 2, 1, 2}}); }),
      make_case<A>("attention_every_op_differently", [](A& n) {
        n.heads_q.shard({{2, 1, 2, 2}});
        n.heads_k.shard({{1, 4, 2, 1}});
        n.scores.shard({{2, 2, 2, 1}, {2, 2, 1, 1}});
        n.softmax.shard({{1, 2, 4, 1}});
        n.context.shard({{2, 1, 2, 2}, {2, 1, 2, 1}});
        n.merge.shard({{1, 2, 4, 1}});
      }),
  };
}
// clang-format on

INSTANTIATE_TEST_SUITE_P(Strategies, TransformerOpsSemiAuto, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// A split of the normalized dim or of the softmax axis is asked for (the strategy says 4 or 8
// blocks) but the op takes x whole there, and the result still equals 1 device.
TEST(TransformerOpsSemiAuto, SplitsOfTheNormalizedDimAndSoftmaxAxisAreGathered) {
  const auto& h = against_one_device<Block>();
  const auto run = h.train(kWorld, [](Block& n) {
    n.norm.shard({{2, 1, 4}, {4}, {4}});
    n.softmax.shard({{1, 1, 8}});
    n.act.shard({{1, 1, 8}});  // an element-wise op keeps its hidden split
  });
  h.expect_equals_one_device(run);
  const TakenSplits& taken = run.seen[0];
  EXPECT_EQ(taken.at("norm/LayerNorm"), 1) << run.sharding;
  EXPECT_EQ(taken.at("softmax/Softmax"), 1) << run.sharding;
  EXPECT_EQ(taken.at("act/GeLU"), 8) << run.sharding;
  EXPECT_NE(run.sharding.find("LayerNorm norm/LayerNorm: " + OpStrategy{{{2, 1, 4}, {4}, {4}}}.str()),
            std::string::npos)
      << run.sharding;
}

// The gradients of the first step through value_and_grad: on 1 device, or on this rank (of 4)
// with LayerNorm's batch split, its gamma and beta replicated.
std::vector<Tensor> block_gradients(bool sharded) {
  set_seed(kSeed);
  Block net;
  net.norm.shard({{4, 1, 1}, {1}, {1}});
  SquaredErrorSum loss_fn;
  auto forward = [&](GraphBuilder& b, const std::vector<Value>& in) { return loss_fn(b, net(b, in[0]), in[1]); };
  GradFunction grad_fn =
      sharded ? value_and_grad(forward, net, net.trainable_params()) : value_and_grad(forward, net.trainable_params());
  dataset::BatchIterator it = batches().iterator(0);
  const std::vector<Tensor>* batch = it.next();
  std::vector<Tensor> out;
  for (const Tensor& g : grad_fn(*batch).grads) out.push_back(g.clone());
  return out;
}

TEST(TransformerOpsSemiAuto, LayerNormGammaAndBetaGradientsUnderABatchSplitEqualOneDevice) {
  const std::vector<Tensor> want = block_gradients(false);
  ASSERT_EQ(want.size(), 4u);  // s, gamma, beta, w
  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  traintest::run_world(4, traintest::Wire::kInproc, [&](int rank) {
    const std::vector<Tensor> got = block_gradients(true);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].shape(), want[i].shape()) << "rank " << rank << " gradient " << i;
      float worst = 0, largest = 0;
      for (int64_t k = 0; k < want[i].numel(); ++k) {
        worst = std::max(worst, std::abs(got[i].f32()[k] - want[i].f32()[k]));
        largest = std::max(largest, std::abs(want[i].f32()[k]));
      }
      EXPECT_GT(largest, 1e-3f) << "gradient " << i << " is zero: the comparison would prove nothing";
      EXPECT_LT(worst, 1e-6f + 1e-5f * largest) << "rank " << rank << " gradient " << i;
    }
  });
}

// The rules' layouts on 4 devices, checked through shard_op.
struct RuleGraph {
  Graph g;
  GraphBuilder b{g};
  Value x = b.input("x", {8, 4, 16});
  Value gamma = b.parameter("gamma", {16});
  Value beta = b.parameter("beta", {16});
};

TEST(TransformerOpsRules, LayerNormLeadingSplitReplicatesGammaAndLeavesItsGradientPartial) {
  RuleGraph r;
  const Value y = r.b.layer_norm(r.x, r.gamma, r.beta);
  const Node& ln = r.g.node(y.id);
  const OpSharding s = shard_op(ln, {{8, 4, 16}, {16}, {16}}, OpStrategy{{{2, 2, 1}, {1}, {1}}}, 4);
  EXPECT_EQ(s.inputs[0].splits(0), 2);
  EXPECT_EQ(s.inputs[0].splits(1), 2);
  EXPECT_EQ(s.inputs[1].splits(0), 1);
  EXPECT_FALSE(s.output.is_partial());
  // The gamma gradient's kernel sums over the split leading dims: partial over both axes.
  const Value dgamma = r.b.op("LayerNormGammaGrad", {y, r.x});
  const OpSharding gs = shard_op(r.g.node(dgamma.id), {{8, 4, 16}, {8, 4, 16}}, OpStrategy{{{2, 2, 1}, {2, 2, 1}}}, 4);
  EXPECT_TRUE(gs.output.is_partial());
  EXPECT_FALSE(gs.carried.is_partial());
  // A split of the normalized dim is cleared from what the op takes (gathered before it).
  const OpSharding h = shard_op(ln, {{8, 4, 16}, {16}, {16}}, OpStrategy{{{1, 1, 4}, {4}, {4}}}, 4);
  EXPECT_EQ(h.inputs[0].splits(2), 1);
  EXPECT_EQ(h.inputs[1].splits(0), 1);
}

TEST(TransformerOpsRules, SoftmaxAxisIsWholeAndLeadingDimsSplit) {
  RuleGraph r;
  const Value y = r.b.softmax(r.x);
  const OpSharding s = shard_op(r.g.node(y.id), {{8, 4, 16}}, OpStrategy{{{2, 1, 2}}}, 4);
  EXPECT_EQ(s.inputs[0].splits(0), 2);
  EXPECT_EQ(s.inputs[0].splits(2), 1);
  EXPECT_EQ(s.output.splits(0), 2);
  // The default strategy splits the batch over every device.
  EXPECT_EQ(default_strategy(r.g.node(y.id), {{8, 4, 16}}, 4).str(), (OpStrategy{{{4, 1, 1}}}.str()));
  // Along axis 0, the batch is the softmax axis: the default splits nothing.
  const Value y0 = r.b.softmax(r.x, 0);
  EXPECT_EQ(default_strategy(r.g.node(y0.id), {{8, 4, 16}}, 4).str(), (OpStrategy{{{1, 1, 1}}}.str()));
}

TEST(TransformerOpsRules, GeLUSplitsEveryDim) {
  RuleGraph r;
  const Value y = r.b.gelu(r.x);
  const OpSharding s = shard_op(r.g.node(y.id), {{8, 4, 16}}, OpStrategy{{{1, 2, 2}}}, 4);
  EXPECT_EQ(s.output.splits(1), 2);
  EXPECT_EQ(s.output.splits(2), 2);
  EXPECT_FALSE(s.output.is_partial());
}

TEST(TransformerOpsRules, TransposeSplitsFollowTheirDimsThroughThePermutation) {
  RuleGraph r;
  const Value y = r.b.transpose(r.x, {2, 0, 1});  // (8, 4, 16) -> (16, 8, 4)
  const OpSharding s = shard_op(r.g.node(y.id), {{8, 4, 16}}, OpStrategy{{{2, 1, 2}}}, 4);
  EXPECT_EQ(s.output.splits(0), 2);  // x's dim 2
  EXPECT_EQ(s.output.splits(1), 2);  // x's dim 0
  EXPECT_EQ(s.output.splits(2), 1);
  EXPECT_FALSE(s.output.is_partial());
}

TEST(TransformerOpsRules, BatchMatMulReduceSplitIsPartialAndBatchSplitIsNot) {
  Graph g;
  GraphBuilder b(g);
  const Value q = b.input("q", {8, 2, 4, 8}), k = b.input("k", {8, 2, 4, 8});
  const Node& scores = g.node(b.batch_matmul(q, k, false, true).id);
  const OpSharding batch = shard_op(scores, {{8, 2, 4, 8}, {8, 2, 4, 8}}, OpStrategy{{{2, 2, 1, 1}, {2, 2, 1, 1}}}, 4);
  EXPECT_FALSE(batch.output.is_partial());
  EXPECT_EQ(batch.output.splits(0), 2);
  EXPECT_EQ(batch.output.splits(1), 2);
  // transpose_b: k's stored dims are (n, k), so its last dim is the reduce loop.
  const OpSharding reduce = shard_op(scores, {{8, 2, 4, 8}, {8, 2, 4, 8}}, OpStrategy{{{1, 1, 1, 4}, {1, 1, 1, 4}}}, 4);
  EXPECT_TRUE(reduce.output.is_partial());
  EXPECT_FALSE(reduce.carried.is_partial());
  // Inputs that split the reduce loop differently are refused.
  EXPECT_THROW(shard_op(scores, {{8, 2, 4, 8}, {8, 2, 4, 8}}, OpStrategy{{{1, 1, 1, 4}, {1, 1, 4, 1}}}, 4),
               InvalidArgument);
}

}  // namespace transformer_sharding_test
}  // namespace
}  // namespace sf::paralleltest
