// Reshape's sharding rule keeps a split through dims that split or merge (a hidden dim reshaped
// into heads and back), so tensor parallel attention runs without gathering its activations:
//   - rule level, through shard_op: (8, 64) -> (8, 4, 16) with the 64 split 4 ways keeps the
//     split on the heads dim and takes x as it is split (no redistribution); (4, 2, 64) ->
//     (8, 64) keeps a split of dim 0; (8, 4, 16) -> (8, 64) turns a heads split into a hidden
//     split; a split of the 16 (a trailing dim of its run) is gathered; a split of the 64 into
//     8 that cannot give each rank whole heads of (4, 16) is refused in one line. In every
//     case each rank's block of x holds exactly the elements of its block of the result, which
//     is what makes the local reshape right;
//   - end to end: self-attention with column-parallel Q/K/V MatMuls, the (B*S, h) -> (B, S,
//     heads, head dim) reshapes and back, and a row-parallel output projection trains on 8
//     virtual ranks (dp 2 x tp 4) equal to 1 device, and its local forward graph gathers
//     nothing: no AllGather at all, and nothing inserted before any Reshape.
#include <gtest/gtest.h>

#include "tests/parallel/train_against_one_device.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/redistribution_planner.h>
#include <shardflow/parallel/sharding/op_sharding.h>
#include <shardflow/parallel/strategy.h>
#include <shardflow/train/semi_auto_step.h>

namespace sf::paralleltest {
namespace {

// ---- rule level --------------------------------------------------------------------------

constexpr int64_t kRuleDevices = 4;

// One Reshape of an input of shape `from` to `to`, sharded by `strategy`.
struct OneReshape {
  Graph g;
  GraphBuilder b{g};
  Shape from;
  int id;
  OneReshape(const Shape& in, const Shape& to) : from(in), id(b.reshape(b.input("x", in), to).id) {}
  const Node& node() const { return g.node(id); }
  OpSharding shard(const Strategy& strategy, int64_t devices = kRuleDevices) const {
    return shard_op(node(), {from}, OpStrategy{{strategy}}, devices);
  }
};

// The row-major indices of the elements of a tensor of shape `shape` that `rank` holds.
std::set<int64_t> held(const TensorLayout& layout, const Shape& shape, int64_t rank) {
  const std::vector<DimSlice> slice = layout.slice(shape, rank);
  std::set<int64_t> out;
  std::vector<int64_t> idx(shape.size(), 0);
  for (;;) {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + slice[d].offset + idx[d];
    out.insert(flat);
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < slice[d].extent) break;
      idx[d] = 0;
    }
    if (d < 0) return out;
  }
}

// Every rank's block of x holds the elements of its block of the result: a reshape keeps the
// row-major order, so the local Reshape of x's block is the result's block.
void expect_blocks_match(const OneReshape& r, const OpSharding& s) {
  for (int64_t rank = 0; rank < kRuleDevices; ++rank)
    EXPECT_EQ(held(s.inputs[0], r.from, rank), held(s.output, r.node().shape, rank)) << "rank " << rank;
}

// Whether carrying x from the split the strategy asks for into what the op takes moves data.
bool redistributes(const OneReshape& r, const Strategy& asked, const OpSharding& s) {
  return !plan_redistribution(strategy_to_layout(asked, kRuleDevices), s.inputs[0], r.from).steps.empty();
}

TEST(ReshapeSharding, HiddenSplitStaysOnTheHeadsDim) {
  const OneReshape r({8, 64}, {8, 4, 16});
  const OpSharding s = r.shard({1, 4});
  EXPECT_EQ(s.inputs[0].splits(1), 4);
  EXPECT_EQ(s.output.splits(0), 1);
  EXPECT_EQ(s.output.splits(1), 4);  // one head per rank
  EXPECT_EQ(s.output.splits(2), 1);
  EXPECT_FALSE(s.output.is_partial());
  EXPECT_FALSE(redistributes(r, {1, 4}, s));
  EXPECT_EQ(s.output.local_shape(r.node().shape), (Shape{8, 1, 16}));
  expect_blocks_match(r, s);
  // Both dims at once: the batch run and the hidden run are loops of their own.
  const OpSharding both = r.shard({2, 2});
  EXPECT_EQ(both.output.splits(0), 2);
  EXPECT_EQ(both.output.splits(1), 2);
  EXPECT_FALSE(redistributes(r, {2, 2}, both));
  expect_blocks_match(r, both);
}

TEST(ReshapeSharding, MergedLeadingDimKeepsItsSplit) {
  const OneReshape r({4, 2, 64}, {8, 64});
  const OpSharding s = r.shard({4, 1, 1});
  EXPECT_EQ(s.output.splits(0), 4);
  EXPECT_EQ(s.output.splits(1), 1);
  EXPECT_FALSE(redistributes(r, {4, 1, 1}, s));
  expect_blocks_match(r, s);
  // The 2 trails its run (4, 2) -> (8): its split is no block of the result, so it is gathered.
  const OpSharding trailing = r.shard({2, 2, 1});
  EXPECT_EQ(trailing.inputs[0].splits(0), 2);
  EXPECT_EQ(trailing.inputs[0].splits(1), 1);
  EXPECT_TRUE(redistributes(r, {2, 2, 1}, trailing));
  expect_blocks_match(r, trailing);
}

TEST(ReshapeSharding, HeadsSplitBecomesAHiddenSplit) {
  const OneReshape r({8, 4, 16}, {8, 64});
  const OpSharding s = r.shard({1, 2, 1});
  EXPECT_EQ(s.output.splits(0), 1);
  EXPECT_EQ(s.output.splits(1), 2);
  EXPECT_FALSE(redistributes(r, {1, 2, 1}, s));
  expect_blocks_match(r, s);
}

TEST(ReshapeSharding, SplitOfATrailingDimOfARunIsGathered) {
  const OneReshape r({8, 4, 16}, {8, 64});
  const OpSharding s = r.shard({1, 1, 4});
  EXPECT_EQ(s.inputs[0].splits(2), 1);  // the op takes the 16 whole
  EXPECT_EQ(s.output.splits(1), 1);
  const RedistributionPlan plan = plan_redistribution(strategy_to_layout({1, 1, 4}, kRuleDevices), s.inputs[0],
                                                      r.from);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].kind, StepKind::kAllGather);
  expect_blocks_match(r, s);
}

TEST(ReshapeSharding, SplitThatCannotGiveEachRankWholeHeadsIsRefused) {
  // h = 64 split 8 ways is 8 columns a rank, but a head is 16: 4 heads do not split 8 ways.
  const OneReshape r({8, 64}, {8, 4, 16});
  std::string message;
  try {
    r.shard({1, 8}, 8);
  } catch (const InvalidArgument& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("Reshape"), std::string::npos) << message;
  EXPECT_NE(message.find("output dim 1 of size 4"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  // The default strategy does not ask for it either: 8 rows over 8 devices, but a merged
  // (2, 4) -> (8) result's leading 2 does not split 8 ways, so nothing is split.
  const OneReshape merge({8, 4}, {2, 16});
  EXPECT_EQ(default_strategy(merge.node(), {merge.from}, 8).str(), (OpStrategy{{{1, 1}}}.str()));
  EXPECT_NO_THROW(shard_op(merge.node(), {merge.from}, std::nullopt, 8));
}

TEST(ReshapeSharding, SizeOneDimsJoinNoRunAndFlattenMergesDimsAfterTheFirst) {
  const OneReshape r({8, 64}, {8, 1, 4, 16});
  const OpSharding s = r.shard({2, 2});
  EXPECT_EQ(s.output.splits(0), 2);
  EXPECT_EQ(s.output.splits(1), 1);
  EXPECT_EQ(s.output.splits(2), 2);
  expect_blocks_match(r, s);
  Graph g;
  GraphBuilder b(g);
  const Node& flatten = g.node(b.flatten(b.input("x", {8, 4, 4})).id);
  const OpSharding f = shard_op(flatten, {{8, 4, 4}}, OpStrategy{{{2, 2, 1}}}, kRuleDevices);
  EXPECT_EQ(f.output.splits(0), 2);
  EXPECT_EQ(f.output.splits(1), 2);
  EXPECT_EQ(f.inputs[0].splits(1), 2);
}

// ---- end to end --------------------------------------------------------------------------

constexpr int64_t kBatch = 8, kSeq = 4, kHidden = 32, kHeads = 8, kHeadDim = kHidden / kHeads;
constexpr int64_t kSteps = 8;
constexpr uint64_t kSeed = 47;
constexpr int kWorld = 8;

// Self-attention on (batch, sequence, hidden), every op a Primitive so that it can be sharded:
// x merged to rows (B*S, h), Q, K, V by MatMul, each reshaped to (B, S, heads, head dim) and
// transposed to (B, heads, S, head dim), softmax(q k^T) v per head, the heads transposed back
// and merged to rows (B*S, h), the output projection by MatMul, and the rows split back to
// (B, S, h).
class Attention : public nn::Cell {
 public:
  static constexpr float kLr = 1e-3f;  // SGD's
  Parameter& wq = register_parameter("wq", {kHidden, kHidden}, "xavier_uniform");
  Parameter& wk = register_parameter("wk", {kHidden, kHidden}, "xavier_uniform");
  Parameter& wv = register_parameter("wv", {kHidden, kHidden}, "xavier_uniform");
  Parameter& wo = register_parameter("wo", {kHidden, kHidden}, "xavier_uniform");
  Primitive& rows = register_primitive("rows", "Reshape", {{"shape", Shape{kBatch * kSeq, kHidden}}});
  Primitive& q = register_primitive("q", "MatMul");
  Primitive& k = register_primitive("k", "MatMul");
  Primitive& v = register_primitive("v", "MatMul");
  Primitive& q_heads = split("q_heads");
  Primitive& k_heads = split("k_heads");
  Primitive& v_heads = split("v_heads");
  Primitive& q_t = transpose("q_t");
  Primitive& k_t = transpose("k_t");
  Primitive& v_t = transpose("v_t");
  Primitive& scores = register_primitive("scores", "BatchMatMul", {{"transpose_b", int64_t{1}}});
  Primitive& softmax = register_primitive("softmax", "Softmax");
  Primitive& context = register_primitive("context", "BatchMatMul");
  Primitive& merge_t = transpose("merge_t");
  Primitive& merge = register_primitive("merge", "Reshape", {{"shape", Shape{kBatch * kSeq, kHidden}}});
  Primitive& proj = register_primitive("proj", "MatMul");
  Primitive& unrows = register_primitive("unrows", "Reshape", {{"shape", Shape{kBatch, kSeq, kHidden}}});

  Value construct(GraphBuilder& b, Value x) override {
    const Value r = rows(b, {x});
    auto head = [&](Primitive& mm, Parameter& w, Primitive& split, Primitive& t) {
      return t(b, {split(b, {mm(b, {r, param(b, w)})})});
    };
    const Value weights = softmax(b, {scores(b, {head(q, wq, q_heads, q_t), head(k, wk, k_heads, k_t)})});
    const Value ctx = merge(b, {merge_t(b, {context(b, {weights, head(v, wv, v_heads, v_t)})})});
    return unrows(b, {proj(b, {ctx, param(b, wo)})});
  }

  // Tensor parallel over tp with the batch over dp: Q, K, V column-parallel (their output
  // columns, hence the heads, split over tp), attention per head block, the projection
  // row-parallel (partial sums AllReduced).
  void shard_tensor_parallel() {
    const Layout l({2, 4}, {"dp", "tp"});
    const TensorLayout cols = l("dp", "tp");                       // (B*S, h)
    const TensorLayout bshd = l("dp", "None", "tp", "None");       // (B, S, heads, head dim)
    const TensorLayout heads4 = l("dp", "tp", "None", "None");     // (B, heads, S, head dim)
    rows.shard({l("dp", "None", "None")});
    for (Primitive* mm : {&q, &k, &v}) mm->shard({l("dp", "None"), l("None", "tp")});
    for (Primitive* s : {&q_heads, &k_heads, &v_heads}) s->shard({cols});
    for (Primitive* t : {&q_t, &k_t, &v_t}) t->shard({bshd});
    scores.shard({heads4, heads4});
    softmax.shard({heads4});
    context.shard({heads4, heads4});
    merge_t.shard({heads4});
    merge.shard({bshd});
    proj.shard({cols, l("tp", "None")});
    unrows.shard({l("dp", "None")});
  }

 private:
  Primitive& split(const std::string& name) {
    return register_primitive(name, "Reshape", {{"shape", Shape{kBatch, kSeq, kHeads, kHeadDim}}});
  }
  Primitive& transpose(const std::string& name) {
    return register_primitive(name, "Transpose", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  }
};

// Row i: x (kSeq, kHidden) normal, and a target of the same shape.
std::vector<Tensor> row(int64_t i) {
  Tensor x({kSeq, kHidden}), t({kSeq, kHidden});
  for (int64_t n = 0; n < x.numel(); ++n) x.f32()[n] = normal_at(kSeed, 0, static_cast<uint64_t>(i * x.numel() + n));
  for (int64_t n = 0; n < t.numel(); ++n) t.f32()[n] = normal_at(kSeed, 1, static_cast<uint64_t>(i * t.numel() + n));
  return {x, t};
}

dataset::Dataset batches() { return dataset::Dataset::generator(row, kSteps * kBatch, {"x", "target"}).batch(kBatch); }

// What a rank's semi-auto program holds around the Reshapes.
struct ReshapeOps {
  std::vector<std::string> reshapes;  // the global Reshape nodes' names
  std::vector<Node> forward;          // the local forward graph's nodes
};

ReshapeOps reshape_ops(const SemiAutoProgram& sp, int /*rank*/) {
  ReshapeOps out;
  for (int id = 0; id < sp.global.size(); ++id)
    if (sp.global.node(id).op == "Reshape") out.reshapes.push_back(sp.global.node(id).name);
  for (int id = 0; id < sp.forward_nodes; ++id) out.forward.push_back(sp.program.graph.node(id));
  return out;
}

// Model::train of a fresh Attention with SGD on the sum of squared errors; every parameter block within 2e-5 of 1
// device's.
const TrainAgainstOneDevice<Attention, ReshapeOps>& against_one_device() {
  static const TrainAgainstOneDevice<Attention, ReshapeOps> harness({
      .seed = kSeed,
      .steps = kSteps,
      .lr = Attention::kLr,
      .batches = batches,
      .loss = [](Attention&) { return std::make_shared<SquaredErrorSum>(); },
      .tolerance = 2e-5f,
      .inspect = reshape_ops,
  });
  return harness;
}

TEST(ReshapeShardingSemiAuto, TensorParallelAttentionEqualsOneDeviceWithoutGathering) {
  const auto& h = against_one_device();
  const auto got = h.train(kWorld, [](Attention& n) { n.shard_tensor_parallel(); });
  ASSERT_NO_FATAL_FAILURE(h.expect_equals_one_device(got));

  // The local forward: the heads stay split (a local head reshape gives the rank's half of the
  // batch and quarter of the heads), and no redistribution precedes a Reshape: each takes its
  // input as the op before it left it.
  const ReshapeOps& ops = got.seen[0];
  ASSERT_EQ(ops.reshapes.size(), 6u) << got.sharding;  // rows, 3 head splits, merge, unrows
  int allreduces = 0, head_reshapes = 0;
  for (const Node& n : ops.forward) {
    EXPECT_NE(n.op, "AllGather") << n.name << "\n" << got.sharding;
    if (n.op == "AllReduce") ++allreduces;
    if (n.op == "Reshape" && n.shape == Shape{kBatch / 2, kSeq, kHeads / 4, kHeadDim}) ++head_reshapes;
    for (const std::string& reshape : ops.reshapes) {
      EXPECT_NE(n.name.rfind(reshape + "/in0/", 0), 0u) << n.name << " redistributes the input of " << reshape;
    }
  }
  EXPECT_EQ(head_reshapes, 3) << got.sharding;
  // The row-parallel projection's partial sums are the one thing communicated (and show that
  // the inspection sees the inserted collectives).
  EXPECT_GE(allreduces, 1) << got.sharding;
}

}  // namespace
}  // namespace sf::paralleltest
