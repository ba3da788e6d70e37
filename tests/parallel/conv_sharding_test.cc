/// @file
/// Semi-auto parallel of convolutional networks (Conv2D, BatchNorm, MaxPool/AvgPool rules):
///   - seed 003's ResNet on 2 and 4 virtual ranks with its convolutions split on output channels
///     (column parallel) or input channels (row parallel, AllReduce after), its BatchNorms and
///     max pooling split on channels, equals 1 device step by step: every rank's loss, and every
///     parameter block, the moving statistics' (split by channel like gamma) included;
///   - with the default strategies (batch split) BatchNorm normalises each rank's rows with their
///     own statistics, so the run equals data parallel mode fed the same rows per rank (the mean
///     of its ranks' losses, its parameters, each rank's moving statistics);
///   - a strategy that splits an image dim gets it gathered (whole loop) and still equals 1 device;
///   - Conv2d, BatchNorm2d, MaxPool2d and AvgPool2d take shard() like a Primitive, the moving
///     statistics' updates follow their BatchNorm, and value_and_grad returns one gradient per
///     parameter although the program also fetches the updates.
/// Images are 16x16 and batches 8 rows, so every run takes well under a second per step.
#include <gtest/gtest.h>

#include "tests/parallel/block_difference.h"

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "examples/seed003_net.h"
#include "tests/train/parallel_fixture.h"

namespace sf::paralleltest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace conv_sharding_test {

constexpr int64_t kSide = 16;  // image side: 8 after the head, then 8, 4, 2, 1
constexpr int64_t kBatch = 8;
constexpr int64_t kSteps = 4;
constexpr uint64_t kSeed = 23;
constexpr float kLr = 0.05f;

// Row `i` of the data set: a (1, kSide, kSide) image and a label in [0, 10).
std::vector<Tensor> image_row(int64_t i) {
  Tensor x({1, kSide, kSide});
  for (int64_t k = 0; k < x.numel(); ++k) x.f32()[k] = normal_at(kSeed, 0, static_cast<uint64_t>(i * x.numel() + k));
  const auto label = static_cast<int32_t>(uniform_at(kSeed, 1, static_cast<uint64_t>(i)) * 10);
  return {x, Tensor::from_vector({}, std::vector<int32_t>{label})};
}

// kSteps global batches of kBatch rows, as 1 device and every semi-auto rank read them.
dataset::Dataset global_batches() {
  return dataset::Dataset::generator(image_row, kSteps * kBatch, {"image", "label"}).batch(kBatch);
}

// Data parallel rank `rank` of `ranks`: its shard (rows rank, rank + ranks, ... of the set, as
// data/sharding.h deals them) reordered so that its batch s holds the rows of block `rank` of
// global batch s, the rows semi-auto rank `rank` is fed. BatchNorm's statistics depend on which
// rows a rank holds, so the two modes must hold the same ones.
dataset::Dataset data_parallel_batches(int ranks, int rank) {
  const int64_t block = kBatch / ranks;
  auto row = [ranks, block](int64_t i) {
    const int64_t k = i % ranks, t = i / ranks, step = t / block, j = t % block;
    return image_row(step * kBatch + k * block + j);
  };
  return dataset::Dataset::generator(row, kSteps * kBatch, {"image", "label"}, ranks, rank).batch(block);
}

struct ConvRun {
  std::vector<std::vector<float>> losses;  // [rank][step]
  std::vector<ParameterList> params;       // [rank]: every parameter after the last step
  std::vector<std::string> sharding;       // [rank]: the global graph's sharding, printed
  std::vector<std::string> image_asked;    // rank 0: the 4-D ops whose strategy splits x's H or W
  std::vector<std::string> image_taken;    // rank 0: those that take x split on H or W
};

// Fills run.image_asked and run.image_taken from rank 0's sharding.
void note_image_splits(const SemiAutoProgram& sp, ConvRun& run) {
  for (const auto& [id, ns] : sp.sharding.by_node) {
    if (!ns.op || sp.global.node(sp.global.node(id).inputs[0]).shape.size() != 4) continue;
    const std::string& name = sp.global.node(id).name;
    const TensorStrategy& x = ns.op->strategy.in[0];
    if (!x.is_layout() && (x.tuple()[2] > 1 || x.tuple()[3] > 1)) run.image_asked.push_back(name);
    if (ns.op->inputs[0].splits(2) > 1 || ns.op->inputs[0].splits(3) > 1) run.image_taken.push_back(name);
  }
}

using Shard = std::function<void(seed003::ResNet&)>;

// Model::train of the ResNet on `devices` ranks (1: stand-alone) in `mode`, SGD.
ConvRun train(int devices, ParallelMode mode, const Shard& shard = {}) {
  ConvRun run;
  run.losses.resize(devices);
  run.params.resize(devices);
  run.sharding.resize(devices);
  auto body = [&](int rank) {
    set_seed(kSeed);
    seed003::ResNet net;
    if (shard) shard(net);
    Model model(net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::SGD>(net.trainable_params(), kLr));
    auto log = std::make_shared<traintest::StepLog>(ParameterList{});
    const bool dp = mode == ParallelMode::kDataParallel;
    model.train(1, dp ? data_parallel_batches(devices, rank) : global_batches(), {log});
    run.losses[rank] = log->losses;
    run.params[rank] = net.get_parameters();
    if (SemiAutoProgram* sp = model.semi_auto_program()) {
      run.sharding[rank] = sp->sharding.str(sp->global);
      if (rank == 0) note_image_splits(*sp, run);
    }
  };
  if (devices == 1) {
    body(0);
    return run;
  }
  traintest::ParallelContextGuard ctx({.parallel_mode = mode, .gradients_mean = true});
  traintest::run_world(devices, traintest::Wire::kInproc, body);
  return run;
}

const ConvRun& one_device() {
  static std::mutex mu;
  static std::unique_ptr<ConvRun> run;
  std::lock_guard<std::mutex> lock(mu);
  if (!run) run = std::make_unique<ConvRun>(train(1, ParallelMode::kStandAlone));
  return *run;
}

void expect_loss_near(float got, float want, const std::string& where) {
  ASSERT_NEAR(got, want, 1e-5 * std::abs(want)) << where;
}

// Every rank's loss at every step within 1e-5 relative of 1 device's, and every parameter block
// (moving statistics included) equal to the 1-device block.
void expect_equals_one_device(const ConvRun& got) {
  const ConvRun& ref = one_device();
  ASSERT_EQ(ref.losses[0].size(), static_cast<size_t>(kSteps));
  for (size_t r = 0; r < got.losses.size(); ++r) {
    ASSERT_EQ(got.losses[r].size(), ref.losses[0].size()) << "rank " << r;
    for (size_t s = 0; s < ref.losses[0].size(); ++s)
      expect_loss_near(got.losses[r][s], ref.losses[0][s],
                       "rank " + std::to_string(r) + " step " + std::to_string(s + 1) + "\n" + got.sharding[0]);
    for (size_t i = 0; i < ref.params[0].size(); ++i) {
      const Parameter& p = got.params[r][i];
      ASSERT_EQ(p.name(), ref.params[0][i].name());
      ASSERT_TRUE(p.sharded()) << p.name();
      EXPECT_LT(block_difference(p, ref.params[0][i].value()), 2e-5f) << "rank " << r << " parameter " << p.name();
    }
  }
}

// The ResNet's op node names.
const char* const kLayers[] = {"layer1", "layer2", "layer3", "layer4"};
std::string op(const std::string& cell, const char* kind) { return cell + "/" + kind; }

// Tensor parallel over `d` ranks: every convolution split on its output channels (column
// parallel) or its input channels (row parallel: a partial output, AllReduce), every BatchNorm
// and the max pooling on channels; the batch is never split where BatchNorm runs, so each
// BatchNorm sees every row and the run is exact.
void shard_channels(seed003::ResNet& net, int64_t d) {
  const OpStrategy column{{{1, 1, 1, 1}, {d, 1, 1, 1}}};
  const OpStrategy row{{{1, d, 1, 1}, {1, d, 1, 1}}};
  const OpStrategy bn{{{1, d, 1, 1}, {d}, {d}, {d}, {d}}};
  net.shard("head/conv/Conv2D", column);  // one input channel: only the output channels split
  net.shard("head/bn/BatchNorm", bn);
  net.shard("head/pool/MaxPool", {{{1, d, 1, 1}}});
  for (const std::string layer : kLayers) {
    net.shard(op(layer + "/conv1", "Conv2D"), column);
    net.shard(op(layer + "/conv2", "Conv2D"), row);
    net.shard(op(layer + "/conv3", "Conv2D"), column);
    net.shard(op(layer + "/down_sample_conv", "Conv2D"), row);
    for (const char* b : {"/bn1", "/bn2", "/bn3", "/down_sample_bn"}) net.shard(op(layer + b, "BatchNorm"), bn);
  }
  if (d == 4) net.shard("layer2/conv3/Conv2D", {{{1, 2, 1, 1}, {2, 2, 1, 1}}});  // both channel dims
}

class ResNetChannelSplit : public ::testing::TestWithParam<int> {};

TEST_P(ResNetChannelSplit, EqualsOneDeviceStepByStep) {
  const int d = GetParam();
  const ConvRun run = train(d, ParallelMode::kSemiAutoParallel, [d](seed003::ResNet& n) { shard_channels(n, d); });
  expect_equals_one_device(run);
  // The moving statistics are split by channel like gamma, and their updates follow BatchNorm.
  for (const Parameter& p : run.params[0]) {
    if (p.name() == "layer3.bn2.moving_mean") {
      EXPECT_EQ(p.value().dim(0), 32 / d);
    }
  }
  EXPECT_NE(run.sharding[0].find("(follows layer3/bn2/BatchNorm)"), std::string::npos) << run.sharding[0];
  EXPECT_NE(run.sharding[0].find("AllReduce"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ResNetChannelSplit, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "_devices"; });

class ResNetBatchSplit : public ::testing::TestWithParam<int> {};

// Default strategies split the batch: BatchNorm's statistics are each rank's own, as in data
// parallel mode, whose global loss (the mean of its ranks') and parameters it reproduces.
TEST_P(ResNetBatchSplit, EqualsDataParallel) {
  const int d = GetParam();
  const ConvRun semi = train(d, ParallelMode::kSemiAutoParallel);
  const ConvRun dp = train(d, ParallelMode::kDataParallel);
  const std::string bn_default = "BatchNorm head/bn/BatchNorm: " + OpStrategy{{{d, 1, 1, 1}, {1}, {1}, {1}, {1}}}.str();
  ASSERT_NE(semi.sharding[0].find(bn_default + " (default)"), std::string::npos) << semi.sharding[0];
  for (size_t s = 0; s < static_cast<size_t>(kSteps); ++s) {
    double mean = 0;
    for (int r = 0; r < d; ++r) mean += dp.losses[r][s];
    mean /= d;
    for (int r = 0; r < d; ++r)
      expect_loss_near(semi.losses[r][s], static_cast<float>(mean), "rank " + std::to_string(r) + " step " +
                                                                        std::to_string(s + 1));
  }
  for (int r = 0; r < d; ++r)
    for (size_t i = 0; i < dp.params[r].size(); ++i) {
      const Parameter& p = semi.params[r][i];
      // Each rank's moving statistics come from its own rows in both modes.
      EXPECT_LT(block_difference(p, dp.params[r][i].value()), 2e-5f) << "rank " << r << " parameter " << p.name();
      EXPECT_EQ(p.value().shape(), dp.params[r][i].value().shape()) << p.name();
    }
  // With BatchNorm, that is not 1 device: the statistics of 8 / d rows differ from those of 8.
  EXPECT_GT(std::abs(semi.losses[0][kSteps - 1] - one_device().losses[0][kSteps - 1]), 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ResNetBatchSplit, ::testing::Values(2, 4),
                         [](const auto& info) { return std::to_string(info.param) + "_devices"; });

// A split of H or W is gathered before the op (no halo exchange), so the run stays exact; the
// BatchNorms are split on channels so that none splits the batch.
TEST(ResNetImageSplit, IsGatheredAndEqualsOneDevice) {
  const ConvRun run = train(4, ParallelMode::kSemiAutoParallel, [](seed003::ResNet& n) {
    shard_channels(n, 4);
    n.shard("head/conv/Conv2D", {{{1, 1, 4, 1}, {1, 1, 1, 1}}});
    n.shard("head/bn/BatchNorm", {{{1, 2, 2, 1}, {2}, {2}, {2}, {2}}});
    n.shard("head/pool/MaxPool", {{{1, 1, 2, 2}}});
    n.shard("layer1/conv2/Conv2D", {{{1, 2, 1, 2}, {1, 2, 1, 1}}});
  });
  expect_equals_one_device(run);
  // Every split of an image dim asked for is gathered: the ops take their inputs whole there.
  EXPECT_EQ(run.image_asked, (std::vector<std::string>{"head/conv/Conv2D", "head/bn/BatchNorm", "head/pool/MaxPool",
                                                         "layer1/conv2/Conv2D"}));
  EXPECT_TRUE(run.image_taken.empty()) << run.image_taken[0] << "\n" << run.sharding[0];
}

// A small network whose cells are sharded with their own shard(), trained with value_and_grad.
class SmallConvNet : public nn::Cell {
 public:
  SmallConvNet() {
    conv = register_cell("conv", std::make_shared<nn::Conv2d>(1, 8, 3, 1, 1));
    bn = register_cell("bn", std::make_shared<nn::BatchNorm2d>(8));
    pool = register_cell("pool", std::make_shared<nn::MaxPool2d>(2, 2));
    conv2 = register_cell("conv2", std::make_shared<nn::Conv2d>(8, 8, 3, 1, 1));
    avg = register_cell("avg", std::make_shared<nn::AvgPool2d>(2, 2));
    gap = register_cell("gap", std::make_shared<nn::GlobalAvgPool2d>());
    fc = register_cell("fc", std::make_shared<nn::Dense>(8, 10));
  }
  Value construct(GraphBuilder& b, Value x) override {
    x = (*pool)(b, b.relu((*bn)(b, (*conv)(b, x))));
    x = (*avg)(b, b.add(b.relu((*conv2)(b, x)), x));
    return (*fc)(b, (*gap)(b, x));
  }
  std::shared_ptr<nn::Conv2d> conv, conv2;
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<nn::MaxPool2d> pool;
  std::shared_ptr<nn::AvgPool2d> avg;
  std::shared_ptr<nn::GlobalAvgPool2d> gap;
  std::shared_ptr<nn::Dense> fc;
};

void shard_small(SmallConvNet& n) {
  n.conv->shard({{1, 1, 1, 1}, {2, 1, 1, 1}});
  n.bn->shard({{1, 2, 1, 1}, {2}, {2}, {2}, {2}});
  n.pool->shard({{1, 2, 1, 1}});
  n.conv2->shard({{1, 2, 1, 1}, {1, 2, 1, 1}});
  n.avg->shard({{2, 1, 1, 1}});
}

// Each step's loss through value_and_grad (the network's own or sharded), and the parameters.
std::vector<float> small_losses(SmallConvNet& net, bool sharded, ParameterList& params) {
  nn::SGD optimizer(net.trainable_params(), kLr);
  nn::CrossEntropyLoss loss_fn;
  auto forward = [&](GraphBuilder& b, const std::vector<Value>& in) { return loss_fn(b, net(b, in[0]), in[1]); };
  GradFunction grad_fn = sharded ? value_and_grad(forward, net, net.trainable_params())
                                 : value_and_grad(forward, net.trainable_params());
  std::vector<float> losses;
  dataset::BatchIterator it = global_batches().iterator(0);
  while (const std::vector<Tensor>* batch = it.next()) {
    auto [loss, grads] = grad_fn(*batch);
    EXPECT_EQ(grads.size(), net.trainable_params().size());
    optimizer.step(grads);
    losses.push_back(loss);
  }
  params = net.get_parameters();
  return losses;
}

TEST(ConvCellsShard, StrategiesKeyTheCellsOpsAndTrainAsOneDevice) {
  SmallConvNet probe;
  shard_small(probe);
  Graph g;
  GraphBuilder b(g);
  probe(b, b.input("x", {kBatch, 1, kSide, kSide}));
  const StrategyTable table = probe.strategies();
  for (const char* name : {"conv/Conv2D", "bn/BatchNorm", "pool/MaxPool", "conv2/Conv2D", "avg/AvgPool"})
    EXPECT_EQ(table.count(name), 1u) << name;
  EXPECT_EQ(table.at("bn/BatchNorm").str(), (OpStrategy{{{1, 2, 1, 1}, {2}, {2}, {2}, {2}}}.str()));

  set_seed(kSeed);
  SmallConvNet ref;
  ParameterList ref_params;
  const std::vector<float> want = small_losses(ref, false, ref_params);
  EXPECT_NE(ref.bn->moving_mean().value().to_vector(), std::vector<float>(8, 0.0f));  // the updates ran

  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  traintest::run_world(2, traintest::Wire::kInproc, [&](int rank) {
    set_seed(kSeed);
    SmallConvNet net;
    shard_small(net);
    ParameterList params;
    const std::vector<float> got = small_losses(net, true, params);
    ASSERT_EQ(got.size(), want.size());
    for (size_t s = 0; s < want.size(); ++s) expect_loss_near(got[s], want[s], "step " + std::to_string(s + 1));
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_LT(block_difference(params[i], ref_params[i].value()), 2e-5f) << rank << " " << params[i].name();
    // The moving statistics are the channel blocks of the 1-device ones, updated every step.
    EXPECT_EQ(net.bn->moving_mean().value().shape(), Shape{4});
    EXPECT_EQ(net.bn->moving_variance().offset(), std::vector<int64_t>{rank * 4});
  });
}

// A strategy on a moving statistic's update that would move the parameter is refused.
TEST(ConvCellsShard, AnUpdateStrategyThatWouldMoveTheParameterIsRefused) {
  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  traintest::run_world(2, traintest::Wire::kInproc, [&](int) {
    set_seed(kSeed);
    SmallConvNet net;
    shard_small(net);
    net.shard("bn/BatchNormUpdateMoving", {{{1}, {2, 1, 1, 1}}});
    nn::CrossEntropyLoss loss_fn;
    auto forward = [&](GraphBuilder& b, const std::vector<Value>& in) { return loss_fn(b, net(b, in[0]), in[1]); };
    GradFunction grad_fn = value_and_grad(forward, net, net.trainable_params());
    dataset::BatchIterator it = global_batches().iterator(0);
    try {
      grad_fn(*it.next());
      ADD_FAILURE() << "not refused";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("updates 'bn.moving_mean' in place"), std::string::npos) << e.what();
    }
  });
}

}  // namespace conv_sharding_test
}  // namespace
}  // namespace sf::paralleltest
