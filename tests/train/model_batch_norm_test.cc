// Model on one device with a BatchNorm network: each training step runs the moving statistics'
// in-place update (so they move), evaluation binds them (inference mode reads them), and a batch
// split into row blocks, which would update them once per block, is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/train/pipeline_net.h"
#include <shardflow/train/conv_layers.h>
#include <shardflow/train/model.h>

namespace sf::traintest {
namespace {

struct BnNet {
  std::shared_ptr<nn::BatchNorm2d> bn = std::make_shared<nn::BatchNorm2d>(16);
  std::shared_ptr<nn::SequentialCell> net = std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(kPipeFeatures, 16), bn, std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(16, 10)});
};

TEST(ModelBatchNorm, TrainingMovesTheMovingStatisticsAndEvaluationReadsThem) {
  set_seed(1);
  BnNet n;
  Model model(*n.net, nn::CrossEntropyLoss(), nn::Momentum(n.net->trainable_params(), 0.02f, 0.9f));
  const std::vector<float> mean_before = n.bn->moving_mean().value().to_vector();
  const std::vector<float> var_before = n.bn->moving_variance().value().to_vector();
  model.train(1, pipe_rows(8 * 5).batch(8));
  EXPECT_NE(n.bn->moving_mean().value().to_vector(), mean_before);
  EXPECT_NE(n.bn->moving_variance().value().to_vector(), var_before);
  n.net->set_train(false);
  const double accuracy = model.eval_accuracy(pipe_rows(64).batch(16));
  EXPECT_GE(accuracy, 0.0);
  EXPECT_LE(accuracy, 1.0);
}

TEST(ModelBatchNorm, RowBlocksThatWouldEachUpdateTheStatisticsAreRefused) {
  set_seed(1);
  BnNet n;
  Model model(*n.net, nn::CrossEntropyLoss(), nn::Momentum(n.net->trainable_params(), 0.02f, 0.9f),
              {.threads = 2, .batch_splits = 2});
  EXPECT_THAT([&] { model.train(1, pipe_rows(16).batch(8)); },
              testing::ThrowsMessage<InvalidArgument>(
                  testing::HasSubstr("updates state in its forward (BatchNormUpdateMoving")));
}

}  // namespace
}  // namespace sf::traintest
