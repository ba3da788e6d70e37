// Semi-auto parallel of the transformer ops (GeLU, LayerNorm, Softmax) equals 1 device:
//   - a small block on (batch 8, sequence 4, hidden 16) — scale, LayerNorm, GeLU, scale,
//     Softmax, MSE — trains 12 steps on 8 virtual ranks under strategies that split the leading
//     dims of each op, split every dim of GeLU, and split LayerNorm's normalized dim and
//     Softmax's axis (gathered before the op); every rank's loss per step equals the 1-device
//     run's and every parameter block the 1-device block;
//   - the splits of the normalized dim and of the softmax axis are really asked for and really
//     gathered: the ops take x whole on that dim;
//   - with the batch split, LayerNorm's gamma and beta gradients (each rank's rows' share,
//     summed over the replicas) equal 1 device's, through value_and_grad on 4 ranks;
//   - the rules' layouts: gamma and beta replicated over a leading split, LayerNormGammaGrad's
//     output partial over it, the normalized dim and softmax axis whole.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <shardflow/parallel/sharding/op_sharding.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/model.h>
#include <shardflow/train/semi_auto_step.h>
#include <shardflow/train/value_and_grad.h>
#include "tests/train/parallel_fixture.h"

namespace sf::paralleltest {
namespace {

constexpr int64_t kBatch = 8, kSeq = 4, kHidden = 16;
constexpr int64_t kSteps = 12;
constexpr uint64_t kSeed = 31;
constexpr int kWorld = 8;

// x -> x * s -> LayerNorm(gamma, beta) -> GeLU -> * w -> Softmax over the hidden dim. Every op
// is a Primitive so that a case can shard it; s and w have a gradient through every op.
class Block : public nn::Cell {
 public:
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

// sum((pred - target)^2) from Sub, Mul and ReduceSum. A sum rather than MSELoss's mean: the
// softmax's values are small, and their mean square error's gradients (1/512 of these) would
// barely move the parameters, so a wrong gradient could hide below the tolerance.
class SquaredErrorSum : public nn::LossFn {
 public:
  Value operator()(GraphBuilder& b, Value pred, Value target) const override {
    const Value d = b.sub(pred, target);
    return b.reduce_sum(b.mul(d, d));
  }
};

constexpr float kLr = 0.5f;

dataset::Dataset batches() { return dataset::Dataset::generator(row, kSteps * kBatch, {"x", "target"}).batch(kBatch); }

using Shard = std::function<void(Block&)>;

struct BlockRun {
  std::vector<std::vector<float>> losses;  // [rank][step]
  std::vector<ParameterList> params;       // [rank]: after the last step
  std::string sharding;                    // rank 0's, printed
  std::map<std::string, int64_t> taken;    // rank 0: per op node, the blocks of x's last dim it takes
  std::vector<Tensor> initial;             // rank 0: the trainable parameters before the first step
};

BlockRun train(int devices, const Shard& shard = {}) {
  BlockRun run;
  run.losses.resize(devices);
  run.params.resize(devices);
  auto body = [&](int rank) {
    set_seed(kSeed);
    Block net;
    if (shard) shard(net);
    Model model(net, std::make_shared<SquaredErrorSum>(), std::make_shared<nn::SGD>(net.trainable_params(), kLr));
    auto log = std::make_shared<traintest::StepLog>(ParameterList{});
    if (rank == 0) run.initial = traintest::clone_values(net.trainable_params());
    model.train(1, batches(), {log});
    run.losses[rank] = log->losses;
    run.params[rank] = net.get_parameters();
    if (SemiAutoProgram* sp = model.semi_auto_program(); sp != nullptr && rank == 0) {
      run.sharding = sp->sharding.str(sp->global);
      for (const auto& [id, ns] : sp->sharding.by_node) {
        if (!ns.op) continue;
        const Node& n = sp->global.node(id);
        const int last = static_cast<int>(sp->global.node(n.inputs[0]).shape.size()) - 1;
        run.taken[n.name] = ns.op->inputs[0].splits(last);
      }
    }
  };
  if (devices == 1) {
    body(0);
    return run;
  }
  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  traintest::run_world(devices, traintest::Wire::kInproc, body);
  return run;
}

const BlockRun& one_device() {
  static std::mutex mu;
  static std::unique_ptr<BlockRun> run;
  std::lock_guard<std::mutex> lock(mu);
  if (!run) run = std::make_unique<BlockRun>(train(1));
  return *run;
}

// The largest difference between `p`'s block and the same block of `whole`.
float block_difference(const Parameter& p, const Tensor& whole) {
  const Tensor& block = p.value();
  float worst = 0;
  for (int64_t k = 0; k < block.numel(); ++k) {
    int64_t rest = k, flat = 0, stride = 1;
    std::vector<int64_t> idx(block.rank());
    for (int d = block.rank() - 1; d >= 0; --d) {
      idx[d] = rest % block.dim(d) + (p.sharded() ? p.offset()[d] : 0);
      rest /= block.dim(d);
    }
    for (int d = block.rank() - 1; d >= 0; --d) {
      flat += idx[d] * stride;
      stride *= whole.dim(d);
    }
    worst = std::max(worst, std::abs(block.f32()[k] - whole.f32()[flat]));
  }
  return worst;
}

void expect_equals_one_device(const BlockRun& got) {
  const BlockRun& ref = one_device();
  ASSERT_EQ(ref.losses[0].size(), static_cast<size_t>(kSteps));
  // Every parameter must move by 100 times the tolerance below at least (w, the least, moves
  // 3.5e-3): equal blocks of parameters that a zero gradient left untouched would prove nothing.
  for (size_t i = 0; i < ref.initial.size(); ++i)
    ASSERT_GT(block_difference(ref.params[0][i], ref.initial[i]), 2e-3f) << ref.params[0][i].name() << " did not move";
  for (size_t r = 0; r < got.losses.size(); ++r) {
    ASSERT_EQ(got.losses[r].size(), ref.losses[0].size()) << "rank " << r;
    for (size_t s = 0; s < ref.losses[0].size(); ++s)
      ASSERT_NEAR(got.losses[r][s], ref.losses[0][s], 1e-5 * std::abs(ref.losses[0][s]))
          << "rank " << r << " step " << s + 1 << "\n"
          << got.sharding;
    ASSERT_EQ(got.params[r].size(), ref.params[0].size());
    for (size_t i = 0; i < ref.params[0].size(); ++i) {
      const Parameter& p = got.params[r][i];
      ASSERT_EQ(p.name(), ref.params[0][i].name());
      EXPECT_LT(block_difference(p, ref.params[0][i].value()), 2e-5f) << "rank " << r << " parameter " << p.name();
    }
  }
}

struct StrategyCase {
  std::string name;
  Shard shard;
};

void PrintTo(const StrategyCase& c, std::ostream* os) { *os << c.name; }

class TransformerOpsSemiAuto : public ::testing::TestWithParam<StrategyCase> {};

TEST_P(TransformerOpsSemiAuto, LossPerStepAndParameterBlocksEqualOneDevice) {
  expect_equals_one_device(train(kWorld, GetParam().shard));
}

std::vector<StrategyCase> cases() {
  return {
      {"all_default_batch_split", [](Block&) {}},
      {"layer_norm_batch_split",
       [](Block& n) {
         n.norm.shard({{8, 1, 1}, {1}, {1}});
       }},
      {"layer_norm_batch_and_sequence_split",
       [](Block& n) {
         n.norm.shard({{2, 4, 1}, {1}, {1}});
       }},
      {"layer_norm_repeated",
       [](Block& n) {
         n.norm.shard({{2, 1, 1}, {1}, {1}});
       }},
      {"layer_norm_hidden_split_gathered",
       [](Block& n) {
         n.norm.shard({{2, 1, 4}, {4}, {4}});
       }},
      {"gelu_every_dim_split",
       [](Block& n) {
         n.act.shard({{2, 2, 2}});
       }},
      {"gelu_hidden_split",
       [](Block& n) {
         n.act.shard({{1, 1, 8}});
       }},
      {"softmax_batch_and_sequence_split",
       [](Block& n) {
         n.softmax.shard({{4, 2, 1}});
       }},
      {"softmax_axis_split_gathered",
       [](Block& n) {
         n.softmax.shard({{1, 1, 8}});
       }},
      {"softmax_axis_and_batch_split_gathered",
       [](Block& n) {
         n.softmax.shard({{2, 2, 2}});
       }},
      {"every_op_differently",
       [](Block& n) {
         n.scale_in.shard({{1, 1, 8}, {8}});
         n.norm.shard({{4, 2, 1}, {1}, {1}});
         n.act.shard({{1, 4, 2}});
         n.scale_out.shard({{2, 1, 4}, {4}});
         n.softmax.shard({{1, 4, 2}});
       }},
  };
}

INSTANTIATE_TEST_SUITE_P(Strategies, TransformerOpsSemiAuto, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// A split of the normalized dim or of the softmax axis is asked for (the strategy says 4 or 8
// blocks) but the op takes x whole there, and the result still equals 1 device.
TEST(TransformerOpsSemiAuto, SplitsOfTheNormalizedDimAndSoftmaxAxisAreGathered) {
  const BlockRun run = train(kWorld, [](Block& n) {
    n.norm.shard({{2, 1, 4}, {4}, {4}});
    n.softmax.shard({{1, 1, 8}});
    n.act.shard({{1, 1, 8}});  // an element-wise op keeps its hidden split
  });
  expect_equals_one_device(run);
  EXPECT_EQ(run.taken.at("norm/LayerNorm"), 1) << run.sharding;
  EXPECT_EQ(run.taken.at("softmax/Softmax"), 1) << run.sharding;
  EXPECT_EQ(run.taken.at("act/GeLU"), 8) << run.sharding;
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

}  // namespace
}  // namespace sf::paralleltest
