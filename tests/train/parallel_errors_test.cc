// Bad input to data/manual-parallel training, each refused with an error naming what is wrong
// before any step runs: an optimizer given parameters that are not the network's, a dataset not
// sharded over the data-parallel ranks, a shard id out of range, a parallel mode not supported
// yet, and a gradient reducer given the wrong gradients or other parameters.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "parallel_fixture.h"
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>
#include <shardflow/train/value_and_grad.h>

namespace sf {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using traintest::image_rows;
using traintest::ParallelContextGuard;
using traintest::run_world;
using traintest::Wire;

TEST(ParallelErrors, OptimizerOverAnotherNetworksParametersIsRefused) {
  nn::Mlp net(784, {16}, 10), other(784, {16}, 10);
  EXPECT_THAT([&] { Model(net, nn::CrossEntropyLoss(), nn::SGD(other.trainable_params(), 0.1f)); },
              ThrowsMessage<InvalidArgument>(
                  HasSubstr("Model: parameter 'fc1_weight' is not a parameter of the network")));
}

TEST(ParallelErrors, DataParallelRefusesAnUnshardedDatasetOnEveryRankBeforeAnyStep) {
  ParallelContextGuard ctx({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true});
  std::vector<std::string> errors(2);
  run_world(2, Wire::kInproc, [&](int rank) {
    nn::Mlp net(784, {16}, 10);
    Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
    try {
      model.train(1, image_rows(64).batch(16));
    } catch (const InvalidArgument& e) {
      errors[rank] = e.what();
    }
    EXPECT_EQ(model.train_program(), nullptr) << "a step was built";
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_THAT(errors[r], HasSubstr("data parallel over 2 ranks needs each rank's dataset sharded with "
                                     "num_shards = 2 and shard_id = its rank (" + std::to_string(r) +
                                     "); this dataset has num_shards = 1, shard_id = 0"));
}

TEST(ParallelErrors, ShardIdOutOfRangeIsRefused) {
  EXPECT_THAT([] { image_rows(64, 2, 2); },
              ThrowsMessage<InvalidArgument>(HasSubstr("shard_id must be in [0, 2) for num_shards = 2, got 2")));
  EXPECT_THAT([] { dataset::Dataset::mnist("/usr/share/datasets/fashion-mnist", "test", 8, 8); },
              ThrowsMessage<InvalidArgument>(HasSubstr("shard_id must be in [0, 8) for num_shards = 8, got 8")));
}

TEST(ParallelErrors, AutoParallelModelIsAcceptedAndTheOverloadWithoutTheNetworkRefused) {
  ParallelContextGuard ctx({.parallel_mode = ParallelMode::kAutoParallel});
  run_world(1, Wire::kInproc, [](int) {  // a parallel mode needs ranks; one is enough
    nn::Mlp net(784, {16}, 10);
    EXPECT_NO_THROW(Model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f)));
    EXPECT_THAT([&] { value_and_grad([](GraphBuilder&, const std::vector<Value>& in) { return in[0]; },
                                     net.trainable_params()); },
                ThrowsMessage<InvalidArgument>(HasSubstr("auto_parallel mode shards the network's ops")));
  });
}

TEST(ParallelErrors, GradReducerRefusesWrongGradientsAndOtherParameters) {
  nn::Mlp net(784, {16}, 10), other(784, {16}, 10);
  nn::DistributedGradReducer reducer(net.trainable_params(), true, 2);
  EXPECT_THAT([&] { reducer({Tensor({784, 16})}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("1 gradients for 4 parameters")));
  std::vector<Tensor> wrong{Tensor({784, 16}), Tensor({16}), Tensor({16, 9}), Tensor({10})};
  EXPECT_THAT([&] { reducer(wrong); }, ThrowsMessage<ShapeError>(HasSubstr("parameter 'fc2_weight' of shape (16, 10)")));
  nn::CrossEntropyLoss ce;
  EXPECT_THAT(
      [&] {
        value_and_grad([&](GraphBuilder& b, const std::vector<Value>& in) { return ce(b, other(b, in[0]), in[1]); },
                       other.trainable_params(), reducer);
      },
      ThrowsMessage<InvalidArgument>(HasSubstr("the grad reducer was made for other parameters")));
}

}  // namespace
}  // namespace sf
