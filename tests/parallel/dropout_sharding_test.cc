// Semi-auto parallel of Dropout and CausalMask equals 1 device:
//   - x (batch 8, sequence 8, hidden 16) scaled, dropped out (p 0.3) with one i32 seed per
//     sample fed as a second input column, scaled again, a sum of squared errors against an f32
//     target, trains 6 steps through value_and_grad and SGD on 8 virtual ranks with Dropout's x
//     split on the batch (the seeds with it), on the sequence, on the hidden dim, on two dims at
//     once and with every op split differently; every rank's loss per step equals the 1-device
//     run's and every parameter block the 1-device block, which a mask drawn from the local
//     block's positions rather than the global ones would break;
//   - attention scores (batch 8, heads 2, queries 8, keys 8) scaled per key, causally masked,
//     softmaxed and scaled again train likewise with CausalMask split on the heads, on the
//     queries (the Softmax after it too), on heads and queries, and on the keys (a block of keys
//     may then be masked whole for its queries; the Softmax gathers the keys);
//   - the splits asked for are the ones the ops take: neither op gathers a split dim;
//   - the rules' layouts: the seeds split as x's batch_axis (dim 0 or another), seeds that
//     disagree refused, no output partial, the default strategy splitting the batch.
#include <gtest/gtest.h>

#include "tests/parallel/train_against_one_device.h"

#include <string>
#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/parallel/sharding/op_sharding.h>
#include <shardflow/train/semi_auto_step.h>

namespace sf::paralleltest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace dropout_sharding_test {

constexpr int64_t kBatch = 8, kSeq = 8, kHidden = 16, kHeads = 2;
constexpr int64_t kSteps = 6;
constexpr uint64_t kSeed = 53;
constexpr int kWorld = 8;

// x -> x * s -> Dropout(seeds) -> * w. Every op is a Primitive so that a case can shard it; s
// and w get their gradients through the dropout's mask. The seeds are the batch's second
// column, which the loss builder hands over before calling the cell (a cell takes one input).
class DropoutNet : public nn::Cell {
 public:
  static constexpr float kLr = 2e-3f;  // SGD's
  static constexpr const char* kOp = "drop/Dropout";
  Parameter& s = register_parameter("s", {kHidden}, "uniform");
  Parameter& w = register_parameter("w", {kHidden}, "uniform");
  Primitive& scale_in = register_primitive("scale_in", "Mul");
  Primitive& drop = register_primitive("drop", "Dropout", {{"p", 0.3}});
  Primitive& scale_out = register_primitive("scale_out", "Mul");
  Value seeds;

  Value construct(GraphBuilder& b, Value x) override {
    return scale_out(b, {drop(b, {scale_in(b, {x, param(b, s)}), seeds}), param(b, w)});
  }
  // Columns x, seeds, target.
  Value loss(GraphBuilder& b, const std::vector<Value>& in) {
    seeds = in[1];
    return squared_error_sum(b, (*this)(b, in[0]), in[2]);
  }
  // Row i: x (kSeq, kHidden) normal, its seed, a target uniform in [0, 1).
  static dataset::Dataset batches() {
    auto row = [](int64_t i) {
      Tensor x({kSeq, kHidden}), t({kSeq, kHidden});
      for (int64_t k = 0; k < x.numel(); ++k)
        x.f32()[k] = normal_at(kSeed, 0, static_cast<uint64_t>(i * x.numel() + k));
      for (int64_t k = 0; k < t.numel(); ++k)
        t.f32()[k] = uniform_at(kSeed, 1, static_cast<uint64_t>(i * t.numel() + k));
      const auto seed = static_cast<int32_t>(uniform_at(kSeed, 2, static_cast<uint64_t>(i)) * 1e9f);
      return std::vector<Tensor>{x, Tensor::from_vector({}, std::vector<int32_t>{seed}), t};
    };
    return dataset::Dataset::generator(row, kSteps * kBatch, {"x", "seeds", "target"}).batch(kBatch);
  }
};

// scores -> * s (per key) -> CausalMask -> Softmax over the keys -> * w (per key).
class MaskNet : public nn::Cell {
 public:
  static constexpr float kLr = 0.05f;  // SGD's
  static constexpr const char* kOp = "mask/CausalMask";
  Parameter& s = register_parameter("s", {kSeq}, "uniform");
  Parameter& w = register_parameter("w", {kSeq}, "uniform");
  Primitive& scale_in = register_primitive("scale_in", "Mul");
  Primitive& mask = register_primitive("mask", "CausalMask");
  Primitive& softmax = register_primitive("softmax", "Softmax", {{"axis", int64_t{-1}}});
  Primitive& scale_out = register_primitive("scale_out", "Mul");

  Value construct(GraphBuilder& b, Value x) override {
    return scale_out(b, {softmax(b, {mask(b, {scale_in(b, {x, param(b, s)})})}), param(b, w)});
  }
  // Columns scores, target.
  Value loss(GraphBuilder& b, const std::vector<Value>& in) { return squared_error_sum(b, (*this)(b, in[0]), in[1]); }
  // Row i: scores (kHeads, kSeq, kSeq) normal with spread 2, a target uniform in [0, 0.5).
  static dataset::Dataset batches() {
    auto row = [](int64_t i) {
      Tensor x({kHeads, kSeq, kSeq}), t({kHeads, kSeq, kSeq});
      for (int64_t k = 0; k < x.numel(); ++k)
        x.f32()[k] = 2.0f * normal_at(kSeed, 3, static_cast<uint64_t>(i * x.numel() + k));
      for (int64_t k = 0; k < t.numel(); ++k)
        t.f32()[k] = 0.5f * uniform_at(kSeed, 4, static_cast<uint64_t>(i * t.numel() + k));
      return std::vector<Tensor>{x, t};
    };
    return dataset::Dataset::generator(row, kSteps * kBatch, {"scores", "target"}).batch(kBatch);
  }
};

// The blocks of each dim of x that the op node named `op` takes.
std::vector<int64_t> taken_splits(const char* op, const SemiAutoProgram& sp) {
  std::vector<int64_t> taken;
  for (const auto& [id, ns] : sp.sharding.by_node) {
    if (!ns.op || sp.global.node(id).name != op) continue;
    const Shape& x = sp.global.node(sp.global.node(id).inputs[0]).shape;
    for (size_t d = 0; d < x.size(); ++d) taken.push_back(ns.op->inputs[0].splits(static_cast<int>(d)));
  }
  return taken;
}

// value_and_grad and SGD at Net::kLr over Net::batches() (Dropout's seeds are a column of their own) with a fresh
// Net; every parameter block within 1e-5 of 1 device's.
template <class Net>
const TrainAgainstOneDevice<Net, std::vector<int64_t>>& against_one_device() {
  static const TrainAgainstOneDevice<Net, std::vector<int64_t>> harness({
      .seed = kSeed,
      .steps = kSteps,
      .lr = Net::kLr,
      .batches = Net::batches,
      .forward = [](Net& net, GraphBuilder& b, const std::vector<Value>& in) { return net.loss(b, in); },
      .tolerance = 1e-5f,
      .inspect = [](const SemiAutoProgram& sp, int /*rank*/) { return taken_splits(Net::kOp, sp); },
  });
  return harness;
}

// The run on kWorld ranks equals 1 device, and the op took x split as `taken` says.
template <class Net>
StrategyCase make_case(std::string name, std::vector<int64_t> taken, Shard<Net> shard) {
  return {std::move(name), [taken, shard] {
            const auto& h = against_one_device<Net>();
            const auto run = h.train(kWorld, shard);
            h.expect_equals_one_device(run);
            EXPECT_EQ(run.seen[0], taken) << run.sharding;
          }};
}

class DropoutSemiAuto : public ::testing::TestWithParam<StrategyCase> {};

TEST_P(DropoutSemiAuto, LossPerStepAndParameterBlocksEqualOneDevice) { GetParam().check(); }

// clang-format off
std::vector<StrategyCase> cases() {
  using D = DropoutNet;
  using M = MaskNet;
  return {
      make_case<D>("dropout_default_batch_split", {8, 1, 1}, [](D&) {}),
      make_case<D>("dropout_batch_split", {8, 1, 1}, [](D& n) { n.drop.shard({{8, 1, 1}, {8}}); }),
      make_case<D>("dropout_sequence_split", {1, 8, 1}, [](D& n) { n.drop.shard({{1, 8, 1}, {1}}); }),
      make_case<D>("dropout_hidden_split", {1, 1, 8}, [](D& n) { n.drop.shard({{1, 1, 8}, {1}}); }),
      make_case<D>("dropout_batch_and_sequence_split", {2, 4, 1}, [](D& n) { n.drop.shard({{2, 4, 1}, {2}}); }),
      make_case<D>("dropout_sequence_and_hidden_split", {1, 2, 4}, [](D& n) { n.drop.shard({{1, 2, 4}, {1}}); }),
      make_case<D>("dropout_every_op_differently", {2, 2, 2}, [](D& n) {
        n.scale_in.shard({{1, 1, 8}, {8}});
        n.drop.shard({{2, 2, 2}, {2}});
        n.scale_out.shard({{1, 4, 2}, {2}});
      }),
      make_case<M>("causal_mask_heads_split", {1, 2, 1, 1}, [](M& n) { n.mask.shard({{1, 2, 1, 1}}); }),
      make_case<M>("causal_mask_batch_and_heads_split", {4, 2, 1, 1}, [](M& n) { n.mask.shard({{4, 2, 1, 1}}); }),
      make_case<M>("causal_mask_query_split", {1, 1, 8, 1}, [](M& n) {
        n.mask.shard({{1, 1, 8, 1}});
        n.softmax.shard({{1, 1, 8, 1}});
      }),
      make_case<M>("causal_mask_heads_and_query_split", {1, 2, 4, 1}, [](M& n) {
        n.mask.shard({{1, 2, 4, 1}});
        n.softmax.shard({{1, 2, 4, 1}});
      }),
      // Blocks of keys after all of a block's queries are masked whole; the Softmax gathers the keys.
      make_case<M>("causal_mask_query_and_key_split", {1, 1, 2, 4}, [](M& n) { n.mask.shard({{1, 1, 2, 4}}); }),
      make_case<M>("causal_mask_key_split", {2, 1, 1, 4}, [](M& n) {
        n.mask.shard({{2, 1, 1, 4}});
        n.softmax.shard({{2, 1, 4, 1}});
      }),
  };
}
// clang-format on

INSTANTIATE_TEST_SUITE_P(Strategies, DropoutSemiAuto, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// The rules' layouts on 8 devices, checked through shard_op.
TEST(DropoutRules, SeedsFollowTheBatchAxisAndEveryDimSplits) {
  Graph g;
  GraphBuilder b(g);
  const Value x = b.input("x", {8, 8, 16}), seeds = b.input("seeds", {8}, DType::kI32);
  const Node& drop = g.node(b.dropout(x, seeds, 0.3f).id);
  const OpSharding s = shard_op(drop, {{8, 8, 16}, {8}}, OpStrategy{{{2, 2, 2}, {2}}}, 8);
  EXPECT_EQ(s.inputs[1].splits(0), 2);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(s.output.splits(d), 2) << "dim " << d;
  EXPECT_FALSE(s.output.is_partial());
  EXPECT_THROW(shard_op(drop, {{8, 8, 16}, {8}}, OpStrategy{{{2, 1, 1}, {4}}}, 8), InvalidArgument);
  EXPECT_EQ(default_strategy(drop, {{8, 8, 16}, {8}}, 8).str(), (OpStrategy{{{8, 1, 1}, {8}}}.str()));
  // With the samples along dim 1, the seeds follow that dim's split.
  const Node& by_seq = g.node(b.dropout(x, b.input("seq_seeds", {8}, DType::kI32), 0.3f, 1).id);
  const OpSharding q = shard_op(by_seq, {{8, 8, 16}, {8}}, OpStrategy{{{2, 4, 1}, {4}}}, 8);
  EXPECT_EQ(q.inputs[1].splits(0), 4);
  EXPECT_EQ(q.output.splits(0), 2);
}

TEST(DropoutRules, CausalMaskSplitsEveryDimWithoutPartials) {
  Graph g;
  GraphBuilder b(g);
  const Node& mask = g.node(b.causal_mask(b.input("scores", {8, 2, 8, 8})).id);
  const OpSharding s = shard_op(mask, {{8, 2, 8, 8}}, OpStrategy{{{1, 2, 2, 2}}}, 8);
  for (int d = 1; d < 4; ++d) EXPECT_EQ(s.output.splits(d), 2) << "dim " << d;
  EXPECT_FALSE(s.output.is_partial());
}

}  // namespace dropout_sharding_test
}  // namespace
}  // namespace sf::paralleltest
