// Model::eval_accuracy in semi-auto and auto parallel mode: after training seed 001's network on
// 8 virtual ranks, every rank reports the accuracy that one device reports for the same
// (gathered) parameters.
#include <gtest/gtest.h>

#include "tests/parallel/semi_auto_world.h"
#include <shardflow/train/gather_parameters.h>

namespace sf::paralleltest {
namespace {

// The 1-device accuracy of seed 001's network holding `whole`.
double one_device_accuracy(const std::vector<Tensor>& whole, const dataset::Dataset& data) {
  set_seed(kSeed);
  Seed001Net net;
  ParameterList params = net.trainable_params();
  EXPECT_EQ(params.size(), whole.size());
  for (size_t i = 0; i < params.size(); ++i) params[i].value() = whole[i];
  Model model(net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::SGD>(params, 0.1f));
  return model.eval_accuracy(data);
}

TEST(SemiAutoEval, EightRanksReportTheAccuracyOfOneDeviceWithTheGatheredParameters) {
  const dataset::Dataset data = data_for(NetKind::kSeed001);
  for (ParallelMode mode : {ParallelMode::kSemiAutoParallel, ParallelMode::kAutoParallel}) {
    std::vector<double> accuracy(kWorld, -1);
    std::vector<Tensor> whole;
    {
      traintest::ParallelContextGuard ctx({.parallel_mode = mode});
      traintest::run_world(kWorld, traintest::Wire::kInproc, [&](int rank) {
        set_seed(kSeed);
        Seed001Net net;
        net.matmul1.shard({{2, 1}, {1, 4}});
        net.matmul2.shard({{1, 8}, {8, 1}});
        Model model(net, std::make_shared<nn::CrossEntropyLoss>(),
                    std::make_shared<nn::SGD>(net.trainable_params(), 0.1f));
        model.train(1, data);
        accuracy[rank] = model.eval_accuracy(data);
        std::vector<Tensor> gathered = gather_parameters(net.trainable_params());
        if (rank == 0) whole = std::move(gathered);
      });
    }
    const double want = one_device_accuracy(whole, data);
    EXPECT_GT(want, 0.0) << parallel_mode_name(mode);
    for (int rank = 0; rank < kWorld; ++rank)
      EXPECT_EQ(accuracy[rank], want) << parallel_mode_name(mode) << " rank " << rank;
  }
}

}  // namespace
}  // namespace sf::paralleltest
