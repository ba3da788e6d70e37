// The GPT decoder (shardflow/models/gpt.h) under its tensor (tp), sequence (sp) and data (dp)
// parallel layouts equals 1 device at the gradient level, on virtual ranks in one process:
//   - step 1: every layout of tp in {2, 3, 4, 8} x sp on/off x dp in {1, 2} (dp * tp <= 8)
//     computes the 1-device loss within 1e-5 relative, and every parameter's gradient blocks,
//     taken from value_and_grad in semi-auto mode (each block summed over its replicas, as the
//     optimizer receives it), are within 1e-5 relative (norm of the difference over the norm)
//     of the same slices of the 1-device gradient; the blocks together cover every element;
//   - the gradients of the parameters every tp rank holds whole (the LayerNorms' gammas and
//     betas, the row-parallel biases bo and b2, wpe when the sequence is not split) are bitwise
//     identical on every rank of a tp group: a replica that drifted by one rounding would make
//     the ranks' copies of the "same" parameter diverge over a long run;
//   - 100 steps of AdamW (weight decay on matrices only, gradients clipped to norm 1 as the
//     example does) on a tiny config: every step's loss within 1e-4 relative of 1 device.
//
// Why the gradients rather than the loss lines the example's tests compare: a wrong block of a
// gradient (a mirror AllReduce skipped, a slice at the wrong offset) moves the loss by less
// than its tolerance for several steps, while the gradient is off by O(1) at once.
//
// The synthetic data mirror examples/gpt.cc's: column 0 of `data` is the sample's dropout seed,
// then token ids below the real vocabulary; the table is padded (vocab 23 -> 24 rows; no
// tensor-parallel degree divides 23) so that the padding rows and the loss's `classes` are
// exercised, and dropout is on (0.1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <shardflow/core/rng.h>
#include <shardflow/models/gpt.h>
#include <shardflow/train/model.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/value_and_grad.h>
#include "tests/train/parallel_fixture.h"

namespace sf::modelstest {
namespace {

using models::Gpt;
using models::GptConfig;
using models::GptParallel;

constexpr uint64_t kInitSeed = 17;
constexpr uint64_t kDataSeed = 29;
constexpr int64_t kBatch = 4;  // global; dp 2 splits it

// Heads, seq and the padded vocabulary (24) are divisible by 2, 3, 4 and 8, so that every tp
// of the matrix splits them; head dim 2 keeps the attention cheap.
GptConfig gradient_config() {
  GptConfig c;
  c.vocab = 23;
  c.vocab_multiple = 24;
  c.layers = 2;
  c.hidden = 48;
  c.heads = 24;
  c.seq = 24;
  c.dropout = 0.1f;
  return c;
}

// The 100-step config: small enough that 100 steps on 4 virtual ranks take seconds, still
// split 4 ways on heads, sequence and the padded vocabulary.
GptConfig long_run_config() {
  GptConfig c;
  c.vocab = 23;
  c.vocab_multiple = 24;
  c.layers = 1;
  c.hidden = 16;
  c.heads = 4;
  c.seq = 8;
  c.dropout = 0.1f;
  return c;
}

// Sample i: data = [seed i, seq ids], labels = seq ids, all uniform below the real vocabulary.
// A function of (i, config) only, so every rank and layout reads the same batches.
std::vector<Tensor> sample(const GptConfig& c, int64_t i) {
  Tensor data({c.seq + 1}, DType::kI32), labels({c.seq}, DType::kI32);
  data.i32()[0] = static_cast<int32_t>(i);
  auto id = [&](uint64_t stream, int64_t k) {
    return static_cast<int32_t>(uniform_at(kDataSeed, stream, static_cast<uint64_t>(i * c.seq + k)) * c.vocab);
  };
  // A walk with a fixed rule (next = 5 * id + 2 mod vocab) broken at random every fourth
  // token or so: learnable, so the 100-step run's loss falls, and yet not a single cycle.
  std::vector<int32_t> walk(c.seq + 1);
  walk[0] = id(0, 0);
  for (int64_t k = 1; k <= c.seq; ++k) {
    const bool jump = uniform_at(kDataSeed, 1, static_cast<uint64_t>(i * c.seq + k)) < 0.25f;
    walk[k] = jump ? id(2, k) : static_cast<int32_t>((5 * walk[k - 1] + 2) % c.vocab);
  }
  for (int64_t k = 0; k < c.seq; ++k) {
    data.i32()[k + 1] = walk[k];
    labels.i32()[k] = walk[k + 1];
  }
  return {data, labels};
}

dataset::Dataset batches(const GptConfig& c, int64_t steps) {
  return dataset::Dataset::generator([c](int64_t i) { return sample(c, i); }, steps * kBatch, {"data", "labels"})
      .batch(kBatch);
}

// The first batch as (batch, seq + 1) and (batch, seq) tensors, for value_and_grad.
std::vector<Tensor> first_batch(const GptConfig& c) {
  Tensor data({kBatch, c.seq + 1}, DType::kI32), labels({kBatch, c.seq}, DType::kI32);
  for (int64_t i = 0; i < kBatch; ++i) {
    const std::vector<Tensor> s = sample(c, i);
    std::memcpy(data.i32() + i * (c.seq + 1), s[0].i32(), s[0].nbytes());
    std::memcpy(labels.i32() + i * c.seq, s[1].i32(), s[1].nbytes());
  }
  return {data, labels};
}

bool is_replicated_over_tp(const std::string& name, bool sp) {
  static const std::set<std::string> kLeaves = {"ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta", "bo",
                                                "b2",        "lnf_gamma", "lnf_beta"};
  const std::string leaf = name.substr(name.rfind('.') + 1);
  return kLeaves.count(leaf) > 0 || (leaf == "wpe" && !sp);
}

// One rank's (or the 1-device run's) first step: the loss and each trainable parameter's
// gradient block, with where the block lies in the full parameter.
struct StepGradients {
  float loss = 0;
  std::vector<std::string> names;
  std::vector<Shape> full_shapes;
  std::vector<std::vector<int64_t>> offsets;  // zeros where the rank holds the whole parameter
  std::vector<Tensor> grads;
};

StepGradients first_step_gradients(const GptConfig& c, const GptParallel* p) {
  Gpt net(c);
  if (p != nullptr) net.shard(*p);
  auto forward = [&net](GraphBuilder& b, const std::vector<Value>& in) { return net.loss(b, net(b, in[0]), in[1]); };
  const ParameterList params = net.trainable_params();
  GradFunction grad_fn = p != nullptr ? value_and_grad(forward, net, params) : value_and_grad(forward, params);
  const GradFunction::Result r = grad_fn(first_batch(c));
  StepGradients out;
  out.loss = r.loss;
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& param = params[i];
    out.names.push_back(param.name());
    out.full_shapes.push_back(param.shape());
    out.offsets.push_back(param.sharded() ? param.offset() : std::vector<int64_t>(param.shape().size(), 0));
    out.grads.push_back(r.grads[i].clone());
  }
  return out;
}

const StepGradients& one_device_gradients() {
  static std::mutex mu;
  static std::unique_ptr<StepGradients> ref;
  std::lock_guard<std::mutex> lock(mu);
  if (!ref) {
    set_seed(kInitSeed);
    ref = std::make_unique<StepGradients>(first_step_gradients(gradient_config(), nullptr));
  }
  return *ref;
}

// Row-major flat index in `full` of element k of a block of shape `block` at `offset`.
int64_t flat_index(int64_t k, const Shape& block, const std::vector<int64_t>& offset, const Shape& full) {
  int64_t flat = 0, stride = 1;
  for (int d = static_cast<int>(block.size()) - 1; d >= 0; --d) {
    flat += (k % block[d] + offset[d]) * stride;
    k /= block[d];
    stride *= full[d];
  }
  return flat;
}

struct LayoutCase {
  std::string name;
  GptParallel p;
};

void PrintTo(const LayoutCase& c, std::ostream* os) { *os << c.name; }

LayoutCase layout(int64_t dp, int64_t tp, bool sp) {
  std::string name = dp > 1 ? fmt::format("dp{}", dp) : "";
  if (tp > 1) name += fmt::format("{}tp{}", name.empty() ? "" : "_", tp);
  if (sp) name += "_sp";
  return {name, GptParallel{.dp = dp, .tp = tp, .sp = sp}};
}

class GptGradients : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(GptGradients, StepOneLossAndEveryGradientEqualOneDevice) {
  const GptConfig c = gradient_config();
  const GptParallel p = GetParam().p;
  const int world = static_cast<int>(p.dp * p.tp);
  const StepGradients& ref = one_device_gradients();
  std::vector<StepGradients> got(world);
  {
    set_seed(kInitSeed);
    traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
    traintest::run_world(world, traintest::Wire::kInproc, [&](int rank) { got[rank] = first_step_gradients(c, &p); });
  }

  for (int r = 0; r < world; ++r) {
    EXPECT_NEAR(got[r].loss, ref.loss, 1e-5 * std::abs(ref.loss)) << "rank " << r;
    ASSERT_EQ(got[r].names, ref.names) << "rank " << r;
  }
  // The tp groups below assume rank = dp index * tp + tp index (the device matrix (dp, tp),
  // its last axis fastest): block 0's wq rows, split over tp, say which tp index a rank has.
  const size_t wq = std::find(ref.names.begin(), ref.names.end(), "block0.wq") - ref.names.begin();
  ASSERT_LT(wq, ref.names.size());
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(got[r].offsets[wq][0], (r % p.tp) * (c.hidden / p.tp)) << "rank " << r;
  }

  for (size_t i = 0; i < ref.names.size(); ++i) {
    const std::string& name = ref.names[i];
    const Tensor& whole = ref.grads[i];
    const Shape& full = ref.full_shapes[i];
    // Every rank's block against the same slice of the 1-device gradient, the squares summed
    // over the ranks: the relative error of the gradient assembled from the blocks (each block
    // counted once per replica, and every block has as many replicas as any other).
    double diff2 = 0, ref2 = 0;
    std::vector<int> covered(whole.numel(), 0);
    for (int r = 0; r < world; ++r) {
      const Tensor& block = got[r].grads[i];
      ASSERT_EQ(block.rank(), whole.rank()) << name;
      for (int64_t k = 0; k < block.numel(); ++k) {
        const int64_t f = flat_index(k, block.shape(), got[r].offsets[i], full);
        ASSERT_LT(f, whole.numel()) << name << " rank " << r;
        const double d = static_cast<double>(block.f32()[k]) - whole.f32()[f];
        diff2 += d * d;
        ref2 += static_cast<double>(whole.f32()[f]) * whole.f32()[f];
        ++covered[f];
      }
    }
    for (int64_t f = 0; f < whole.numel(); ++f) {
      ASSERT_EQ(covered[f], covered[0]) << name << ": element " << f << " is held by another number of ranks";
    }
    ASSERT_GT(covered[0], 0) << name;
    const std::string leaf = name.substr(name.rfind('.') + 1);
    if (leaf == "bk") {
      // The key bias adds q.bk to every score of a query's row, which the softmax cancels: its
      // true gradient is 0 and both runs hold rounding noise, which a relative error would
      // compare with itself. Bound the noise instead (about 1e-11 per element; the smallest other
      // gradient, bq's, is about 5e-5 per element).
      EXPECT_LT(std::sqrt(diff2 / covered[0]), 1e-9) << name;
      continue;
    }
    ASSERT_GT(ref2, 1e-12) << name << "'s gradient is zero: comparing it would prove nothing";
    EXPECT_LE(std::sqrt(diff2 / ref2), 1e-5) << name;
  }

  // Parameters every tp rank holds whole: their gradients bitwise equal over each tp group.
  for (size_t i = 0; i < ref.names.size(); ++i) {
    if (!is_replicated_over_tp(ref.names[i], p.sp)) continue;
    for (int r = 0; r < world; ++r) {
      const Tensor& g = got[r].grads[i];
      ASSERT_EQ(g.shape(), ref.full_shapes[i]) << ref.names[i] << " is not whole on rank " << r;
      const Tensor& lead = got[r - r % p.tp].grads[i];  // the tp group's first rank
      EXPECT_EQ(std::memcmp(g.raw(), lead.raw(), g.nbytes()), 0)
          << ref.names[i] << ": rank " << r << "'s gradient differs from rank " << r - r % p.tp << "'s";
    }
  }
}

// clang-format off
INSTANTIATE_TEST_SUITE_P(Layouts, GptGradients, ::testing::Values(
    layout(1, 2, false), layout(1, 2, true), layout(1, 3, false), layout(1, 3, true),
    layout(1, 4, false), layout(1, 4, true), layout(1, 8, false), layout(1, 8, true), layout(2, 1, false),
    layout(2, 2, false), layout(2, 2, true), layout(2, 3, false), layout(2, 3, true),
    layout(2, 4, false), layout(2, 4, true)),
    [](const auto& info) { return info.param.name; });
// clang-format on

// 100 steps of Model::train with AdamW on every rank of a layout (nullptr: 1 device).
constexpr int64_t kLongSteps = 100;

struct TrainingRun {
  std::vector<std::vector<float>> losses;  // [rank][step]: every rank reports the global loss
  std::vector<ParameterList> params;       // [rank]: after the last step
};

TrainingRun train(const GptParallel* p) {
  const GptConfig c = long_run_config();
  const int world = p != nullptr ? static_cast<int>(p->dp * p->tp) : 1;
  TrainingRun run;
  run.losses.resize(world);
  run.params.resize(world);
  auto body = [&](int rank) {
    Gpt net(c);
    if (p != nullptr) net.shard(*p);
    // The example's optimizer (examples/gpt.cc), with a larger rate so that 100 steps of a
    // batch of 4 learn the walk's rule.
    auto opt = std::make_shared<nn::AdamW>(net.trainable_params(), 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f,
                                           nn::decay_except_vectors);
    opt->set_max_grad_norm(1.0f);
    Model model(net, std::make_shared<models::GptLoss>(net), opt);
    auto log = std::make_shared<traintest::StepLog>(ParameterList{});
    model.train(1, batches(c, kLongSteps), {log});
    run.losses[rank] = log->losses;
    run.params[rank] = net.trainable_params();
  };
  set_seed(kInitSeed);
  if (p == nullptr) {
    body(0);
    return run;
  }
  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  traintest::run_world(world, traintest::Wire::kInproc, body);
  return run;
}

const std::vector<float>& one_device_losses() {
  static std::mutex mu;
  static std::unique_ptr<std::vector<float>> ref;
  std::lock_guard<std::mutex> lock(mu);
  if (!ref) ref = std::make_unique<std::vector<float>>(train(nullptr).losses[0]);
  return *ref;
}

float mean(const float* first, const float* last) {
  double sum = 0;
  for (const float* x = first; x != last; ++x) sum += *x;
  return static_cast<float>(sum / static_cast<double>(last - first));
}

class GptTraining : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(GptTraining, HundredAdamWStepsLossPerStepEqualsOneDevice) {
  const std::vector<float>& ref = one_device_losses();
  ASSERT_EQ(ref.size(), static_cast<size_t>(kLongSteps));
  // The run must learn, or equal losses would only show equal initial values (a batch of 4
  // makes single losses noisy: compare the first and last ten steps).
  ASSERT_LT(mean(ref.data() + kLongSteps - 10, ref.data() + kLongSteps), 0.75f * mean(ref.data(), ref.data() + 10))
      << "the 1-device run does not learn";
  const GptParallel& p = GetParam().p;
  const TrainingRun got = train(&p);
  for (size_t r = 0; r < got.losses.size(); ++r) {
    ASSERT_EQ(got.losses[r].size(), ref.size()) << "rank " << r;
    for (size_t s = 0; s < ref.size(); ++s) {
      ASSERT_NEAR(got.losses[r][s], ref[s], 1e-4 * std::abs(ref[s])) << "rank " << r << " step " << s + 1;
    }
  }
  // After 100 steps, the replicated parameters are still bitwise equal over each tp group.
  for (size_t r = 0; r < got.params.size(); ++r) {
    const ParameterList& mine = got.params[r];
    const ParameterList& lead = got.params[r - r % p.tp];
    for (size_t i = 0; i < mine.size(); ++i) {
      if (!is_replicated_over_tp(mine[i].name(), p.sp)) continue;
      ASSERT_EQ(mine[i].value().shape(), mine[i].shape()) << mine[i].name() << " is not whole on rank " << r;
      EXPECT_EQ(std::memcmp(mine[i].value().raw(), lead[i].value().raw(), mine[i].value().nbytes()), 0)
          << mine[i].name() << ": rank " << r << " differs from rank " << r - r % p.tp << " after training";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, GptTraining, ::testing::Values(layout(2, 2, true), layout(1, 4, false)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sf::modelstest
