// Tests for the convolutional cells (train/conv_layers.h) and the parts of Cell they rely on:
// output shapes, parameter names and initial values, trainable vs non-trainable parameters,
// set_train reaching every child, BatchNorm2d's graph in each mode, and a small
// conv-BN-ReLU-pool network run forward and backward whose moving statistics are updated by
// the in-place nodes its training graph adds.
#include <shardflow/train/conv_layers.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/executor.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/train/layers.h>

namespace sf {
namespace {

std::vector<std::string> names_of(const ParameterList& ps) {
  std::vector<std::string> out;
  for (const Parameter& p : ps) out.push_back(p.name());
  return out;
}

// Node ids of the ops named `op` in g.
std::vector<int> nodes_of(const Graph& g, const std::string& op) {
  std::vector<int> out;
  for (const Node& n : g.nodes())
    if (n.op == op) out.push_back(n.id);
  return out;
}

// Binds every parameter of `net` that the graph uses (by name, as the runtime binds them).
void bind_parameters(Executor& ex, const Graph& g, nn::Cell& net) {
  for (Parameter& p : net.get_parameters())
    if (const int id = g.find(p.name()); id >= 0) ex.bind(id, p.value());
}

Tensor random_input(const Shape& shape, uint64_t seed) {
  Tensor x(shape);
  fill_random(x, Distribution::kNormal, 0.5f, 1.0f, seed, 0);
  return x;
}

class ConvLayers : public ::testing::Test {
 protected:
  void SetUp() override { set_seed(42); }
  void TearDown() override { set_seed(0); }
};

TEST_F(ConvLayers, Conv2dShapesParametersAndDefaults) {
  nn::Conv2d conv(3, 8, 3, 2, 1);
  EXPECT_EQ(names_of(conv.trainable_params()), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(conv.weight().shape(), (Shape{8, 3, 3, 3}));
  EXPECT_FALSE(conv.bias().defined());
  Graph g;
  GraphBuilder b(g);
  Value y = conv(b, b.input("x", {2, 3, 28, 28}));
  EXPECT_EQ(b.shape(y), (Shape{2, 8, 14, 14}));
  EXPECT_EQ(g.node(y.id).op, "Conv2D");

  nn::Conv2d projection(8, 16, 1, 2, 0, /*has_bias=*/true);
  EXPECT_EQ(names_of(projection.trainable_params()), (std::vector<std::string>{"weight", "bias"}));
  Graph g2;  // a root cell's parameters are named "weight", as conv's: another graph
  GraphBuilder b2(g2);
  EXPECT_EQ(b2.shape(projection(b2, b2.input("x", {2, 8, 14, 14}))), (Shape{2, 16, 7, 7}));
}

TEST_F(ConvLayers, Conv2dWithBiasAddsItPerChannel) {
  nn::Conv2d conv(2, 2, 1, 1, 0, /*has_bias=*/true);
  conv.trainable_params();  // named and initialised
  conv.weight().value().copy_from(Tensor::from_vector({2, 2, 1, 1}, std::vector<float>{1, 0, 1, 1}));
  conv.bias().value().copy_from(Tensor::from_vector({2}, std::vector<float>{10, 20}));
  Graph g;
  GraphBuilder b(g);
  Value x = b.input("x", {1, 2, 1, 2});
  Value y = conv(b, x);
  Executor ex(g, {y.id});
  ex.bind(x.id, Tensor::from_vector({1, 2, 1, 2}, std::vector<float>{1, 2, 3, 4}));
  bind_parameters(ex, g, conv);
  // Channel 0 = x0 + 10, channel 1 = x0 + x1 + 20.
  EXPECT_EQ(ex.run()[0].to_vector(), (std::vector<float>{11, 12, 24, 26}));
}

TEST_F(ConvLayers, Conv2dWeightIsHeNormalByDefault) {
  nn::Conv2d conv(64, 64, 3);
  conv.trainable_params();
  const Tensor& w = conv.weight().value();
  double sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    sum += w.f32()[i];
    sum_sq += static_cast<double>(w.f32()[i]) * w.f32()[i];
  }
  const double n = static_cast<double>(w.numel());
  const double std_dev = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
  EXPECT_NEAR(std_dev, std::sqrt(2.0 / (64 * 9)), 0.02 * std::sqrt(2.0 / (64 * 9)));
  EXPECT_NEAR(sum / n, 0.0, 0.002);
}

TEST_F(ConvLayers, BatchNorm2dHasTrainableAffineAndNonTrainableMovingStatistics) {
  nn::SequentialCell net{std::make_shared<nn::Conv2d>(1, 3, 3), std::make_shared<nn::BatchNorm2d>(3)};
  EXPECT_EQ(names_of(net.get_parameters()),
            (std::vector<std::string>{"0.weight", "1.gamma", "1.beta", "1.moving_mean", "1.moving_variance"}));
  EXPECT_EQ(names_of(net.trainable_params()), (std::vector<std::string>{"0.weight", "1.gamma", "1.beta"}));
  EXPECT_EQ(names_of(net.untrainable_params()), (std::vector<std::string>{"1.moving_mean", "1.moving_variance"}));
  const ParameterList all = net.get_parameters();
  EXPECT_EQ(all[1].value().to_vector(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(all[2].value().to_vector(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(all[3].value().to_vector(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(all[4].value().to_vector(), (std::vector<float>{1, 1, 1}));
  EXPECT_TRUE(all[0].requires_grad());
  EXPECT_FALSE(all[3].requires_grad());
}

TEST_F(ConvLayers, SetTrainReachesEveryChild) {
  auto bn = std::make_shared<nn::BatchNorm2d>(4);
  auto inner = std::make_shared<nn::SequentialCell>(std::initializer_list<nn::CellPtr>{bn});
  nn::SequentialCell net{std::make_shared<nn::Conv2d>(1, 4, 3), inner};
  EXPECT_TRUE(net.training() && inner->training() && bn->training());  // cells start in training mode
  net.set_train(false);
  EXPECT_FALSE(net.training() || inner->training() || bn->training());
  net.set_train();
  EXPECT_TRUE(bn->training());
}

TEST_F(ConvLayers, BatchNorm2dGraphInEachMode) {
  nn::BatchNorm2d bn(3);
  bn.set_scope_name("bn1");
  {
    Graph g;
    GraphBuilder b(g);
    Value x = b.input("x", {2, 3, 4, 4});
    Value y = bn(b, x);
    EXPECT_EQ(b.shape(y), (Shape{2, 3, 4, 4}));
    EXPECT_EQ(g.node(y.id).attrs.get_int("training"), 1);
    const std::vector<int> updates = nodes_of(g, "BatchNormUpdateMoving");
    ASSERT_EQ(updates.size(), 2u);
    const auto consumers = g.consumers();
    for (int id : updates) {
      const Node& n = g.node(id);
      EXPECT_GE(n.def->inplace_input, 0);
      EXPECT_TRUE(consumers[id].empty());
      EXPECT_EQ(n.inputs[1], x.id);
      EXPECT_EQ(n.attrs.get_float("momentum"), 0.9f);
    }
    EXPECT_EQ(g.node(g.node(updates[0]).inputs[0]).name, "moving_mean");
    EXPECT_EQ(g.node(g.node(updates[1]).inputs[0]).name, "moving_variance");
  }
  bn.set_train(false);
  Graph g;
  GraphBuilder b(g);
  Value y = bn(b, b.input("x", {2, 3, 4, 4}));
  EXPECT_EQ(g.node(y.id).attrs.get_int("training"), 0);
  EXPECT_TRUE(nodes_of(g, "BatchNormUpdateMoving").empty());
}

TEST_F(ConvLayers, PoolCellsShapes) {
  Graph g;
  GraphBuilder b(g);
  Value x = b.input("x", {2, 4, 28, 28});
  EXPECT_EQ(b.shape(nn::MaxPool2d(3, 2, 1)(b, x)), (Shape{2, 4, 14, 14}));
  EXPECT_EQ(b.shape(nn::MaxPool2d(2, 2)(b, x)), (Shape{2, 4, 14, 14}));
  EXPECT_EQ(b.shape(nn::AvgPool2d(2, 2)(b, x)), (Shape{2, 4, 14, 14}));
  EXPECT_EQ(b.shape(nn::AvgPool2d(3, 1, 1)(b, x)), (Shape{2, 4, 28, 28}));
  EXPECT_EQ(b.shape(nn::GlobalAvgPool2d()(b, x)), (Shape{2, 4}));
}

// conv-BN-ReLU-maxpool, conv(stride 2)-BN-ReLU, global average pool, dense.
std::shared_ptr<nn::SequentialCell> small_net() {
  return std::make_shared<nn::SequentialCell>(std::initializer_list<nn::CellPtr>{
      std::make_shared<nn::Conv2d>(1, 4, 3, 1, 1), std::make_shared<nn::BatchNorm2d>(4),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2, 2),
      std::make_shared<nn::Conv2d>(4, 8, 3, 2, 1), std::make_shared<nn::BatchNorm2d>(8),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::GlobalAvgPool2d>(), std::make_shared<nn::Dense>(8, 3)});
}

TEST_F(ConvLayers, SmallNetTrainsItsTrainableParamsAndUpdatesMovingStatistics) {
  auto net = small_net();
  const ParameterList trainable = net->trainable_params();
  EXPECT_EQ(trainable.size(), 8u);  // 2 conv weights, 2 x (gamma, beta), dense weight and bias
  Graph g;
  GraphBuilder b(g);
  Value x = b.input("x", {4, 1, 12, 12});
  Value labels = b.input("labels", {4}, DType::kI32);
  Value logits = (*net)(b, x);
  ASSERT_EQ(b.shape(logits), (Shape{4, 3}));
  Value loss = b.softmax_cross_entropy(logits, labels);
  std::vector<int> param_nodes;
  for (const Parameter& p : trainable) param_nodes.push_back(g.find(p.name()));
  const std::vector<int> grads = gradients(g, loss.id, param_nodes);
  const std::vector<int> updates = nodes_of(g, "BatchNormUpdateMoving");
  ASSERT_EQ(updates.size(), 4u);

  // The training program: loss, gradients, and every in-place node of the graph.
  std::vector<int> fetches{loss.id, g.find("0/Conv2D")};
  fetches.insert(fetches.end(), grads.begin(), grads.end());
  fetches.insert(fetches.end(), updates.begin(), updates.end());
  Executor ex(g, fetches);
  const Tensor xv = random_input({4, 1, 12, 12}, 3);
  ex.bind(x.id, xv);
  ex.bind(labels.id, Tensor::from_vector({4}, std::vector<int32_t>{0, 1, 2, 1}));
  bind_parameters(ex, g, *net);
  const std::vector<Tensor>& out = ex.run();
  EXPECT_TRUE(std::isfinite(out[0].item()));
  for (size_t i = 0; i < trainable.size(); ++i) {
    const Tensor& grad = out[2 + i];
    EXPECT_EQ(grad.shape(), trainable[i].shape()) << trainable[i].name();
    double norm = 0;
    for (float v : grad.to_vector()) norm += std::fabs(v);
    EXPECT_GT(norm, 0.0) << trainable[i].name() << " got no gradient";
  }

  // The first BatchNorm2d's moving statistics moved 10% of the way to conv1's batch statistics.
  const Tensor& conv1 = out[1];
  const ParameterList frozen = net->untrainable_params();
  ASSERT_EQ(names_of(frozen), (std::vector<std::string>{"1.moving_mean", "1.moving_variance", "5.moving_mean",
                                                        "5.moving_variance"}));
  const int64_t plane = 12 * 12, count = 4 * plane;
  for (int64_t c = 0; c < 4; ++c) {
    double s = 0, sq = 0;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t k = 0; k < plane; ++k) s += conv1.f32()[(n * 4 + c) * plane + k];
    const double mean = s / count;
    for (int64_t n = 0; n < 4; ++n)
      for (int64_t k = 0; k < plane; ++k) {
        const double d = conv1.f32()[(n * 4 + c) * plane + k] - mean;
        sq += d * d;
      }
    EXPECT_NEAR(frozen[0].value().f32()[c], 0.1 * mean, 1e-5) << "channel " << c;
    EXPECT_NEAR(frozen[1].value().f32()[c], 0.9 + 0.1 * sq / (count - 1), 1e-5) << "channel " << c;
  }

  // In inference mode the same cells build no updates and normalise with what was learned.
  net->set_train(false);
  Graph eval;
  GraphBuilder eb(eval);
  Value ex_in = eb.input("x", {4, 1, 12, 12});
  Value eval_logits = (*net)(eb, ex_in);
  EXPECT_TRUE(nodes_of(eval, "BatchNormUpdateMoving").empty());
  const Tensor before = frozen[0].value().clone();
  Executor run_eval(eval, {eval_logits.id, eval.find("1/BatchNorm")});
  run_eval.bind(ex_in.id, xv);
  bind_parameters(run_eval, eval, *net);
  const std::vector<Tensor>& eval_out = run_eval.run();
  EXPECT_TRUE(bitwise_equal(frozen[0].value(), before));
  // BatchNorm with gamma 1, beta 0 and the moving statistics: (conv1 - mean) / sqrt(var + eps).
  const float m0 = frozen[0].value().f32()[0], v0 = frozen[1].value().f32()[0];
  EXPECT_NEAR(eval_out[1].f32()[0], (conv1.f32()[0] - m0) / std::sqrt(v0 + 1e-5f), 1e-4);
}

}  // namespace
}  // namespace sf
