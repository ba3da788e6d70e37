// Tests for the misuses refused instead of training silently wrong: one network used by several
// rank threads of this process (train/rank_owner.h, Cell::claim_for_calling_rank), and a
// parallel mode set with no ranks (train/needs_ranks.h). Sequential reuse by the same rank, a
// network of a job that has ended, and a one-rank job stay allowed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <shardflow/comm/inproc/transport.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/core/rng.h>
#include <shardflow/train/grad_reducer.h>
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>
#include <shardflow/train/value_and_grad.h>
#include "tests/comm/rank_threads.h"
#include "tests/train/parallel_fixture.h"
#include "tests/train/toy_data.h"

namespace sf {
namespace {

using ::testing::HasSubstr;
using traintest::kClasses;
using traintest::kIn;

// The message of what fn throws as InvalidArgument ("" if it throws nothing).
template <class Fn>
std::string invalid_argument_of(Fn&& fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

// Contexts of one inproc world of n ranks, kept alive across several rank runs (one job).
std::vector<std::shared_ptr<comm::RankContext>> job_of(int n) {
  std::vector<std::shared_ptr<comm::RankContext>> ranks;
  for (const auto& t : comm::make_inproc_world(n)) ranks.push_back(std::make_shared<comm::RankContext>(t, 0));
  return ranks;
}

// Runs fn(rank) on one thread per rank of `job`; returns each rank's InvalidArgument message.
std::vector<std::string> on_ranks(const std::vector<std::shared_ptr<comm::RankContext>>& job,
                                  const std::function<void(int)>& fn) {
  std::vector<std::string> messages(job.size());
  commtest::run_ranks(static_cast<int>(job.size()), [&](int r) {
    comm::RankBinding bind(job[r]);
    messages[r] = invalid_argument_of([&] { fn(r); });
  });
  return messages;
}

int count_nonempty(const std::vector<std::string>& v) {
  int n = 0;
  for (const auto& s : v) n += !s.empty();
  return n;
}

TEST(RankMisuse, OneNetworkOnTwoRankThreadsIsRefusedNamingTheRule) {
  nn::Mlp net(kIn, {8}, kClasses);  // built outside the ranks' function: shared
  const auto job = job_of(2);
  const std::vector<std::string> messages = on_ranks(job, [&](int) {
    Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
  });
  ASSERT_EQ(count_nonempty(messages), 1) << "exactly the second rank to arrive is refused";
  const std::string& m = messages[0].empty() ? messages[1] : messages[0];
  const int owner = messages[0].empty() ? 0 : 1;
  EXPECT_EQ(m, fmt::format("network 'Mlp' is already used by rank {} in this process; build one network per rank "
                           "(inside the rank's function)",
                           owner));
}

TEST(RankMisuse, FunctionalPathRefusesASharedNetworkWhenItBuildsTheGraph) {
  nn::Mlp net(kIn, {8}, kClasses);
  const dataset::Dataset ds = traintest::random_rows(8, 3).batch(8);
  const std::vector<Tensor> batch = *ds.iterator().next();
  const std::vector<std::string> messages = on_ranks(job_of(2), [&](int) {
    nn::CrossEntropyLoss loss;
    auto grad_fn = value_and_grad([&](GraphBuilder& b, const std::vector<Value>& in) { return loss(b, net(b, in[0]), in[1]); },
                                  net.trainable_params());
    grad_fn({batch[0].clone(), batch[1].clone()});
  });
  ASSERT_EQ(count_nonempty(messages), 1);
  EXPECT_THAT(messages[0] + messages[1], HasSubstr("network 'Mlp' is already used by rank"));
}

TEST(RankMisuse, TheSameRankMayReuseItsNetworkAcrossModelsAndRuns) {
  const auto job = job_of(2);
  std::vector<std::unique_ptr<nn::Mlp>> nets(2);
  for (auto& n : nets) n = std::make_unique<nn::Mlp>(kIn, std::vector<int64_t>{8}, kClasses);
  const dataset::Dataset ds = traintest::random_rows(16, 3).batch(8);
  for (int run = 0; run < 2; ++run) {  // two runs of the same job, as two run_ranks() calls
    const std::vector<std::string> messages = on_ranks(job, [&](int r) {
      Model first(*nets[r], nn::CrossEntropyLoss(), nn::SGD(nets[r]->trainable_params(), 0.1f));
      first.train(1, ds);
      Model second(*nets[r], nn::CrossEntropyLoss(), nn::SGD(nets[r]->trainable_params(), 0.1f));
      second.train(1, ds);
    });
    EXPECT_EQ(count_nonempty(messages), 0) << messages[0] << messages[1];
  }
  // In the same job another rank may not take rank 0's network over.
  const std::vector<std::string> taken = on_ranks(job, [&](int r) {
    if (r == 1) Model m(*nets[0], nn::CrossEntropyLoss(), nn::SGD(nets[0]->trainable_params(), 0.1f));
  });
  EXPECT_THAT(taken[1], HasSubstr("network 'Mlp' is already used by rank 0 in this process"));
}

TEST(RankMisuse, ANetworkOfAnEndedJobOrAOneRankJobIsFree) {
  nn::Mlp net(kIn, {8}, kClasses);
  {
    const auto job = job_of(2);
    EXPECT_EQ(count_nonempty(on_ranks(job, [&](int r) {
                if (r == 0) Model m(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
              })),
              0);
  }  // the job ends: its ranks are gone
  const auto next = job_of(2);
  EXPECT_EQ(count_nonempty(on_ranks(next, [&](int r) {
              if (r == 1) Model m(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
            })),
            0);
  // One rank: nothing to share with.
  const auto single = job_of(1);
  for (int run = 0; run < 2; ++run)
    EXPECT_EQ(count_nonempty(on_ranks(single, [&](int) {
                Model m(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
              })),
              0);
}

TEST(RankMisuse, ParallelModesWithoutRanksAreRefusedNamingTheModeAndTheRule) {
  nn::Mlp net(kIn, {8}, kClasses);
  for (ParallelMode mode : {ParallelMode::kDataParallel, ParallelMode::kHybridParallel,
                            ParallelMode::kSemiAutoParallel, ParallelMode::kAutoParallel}) {
    traintest::ParallelContextGuard guard({.parallel_mode = mode});
    EXPECT_EQ(invalid_argument_of([&] { Model m(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f)); }),
              fmt::format("Model: parallel_mode {} needs ranks: call sf::comm::init(...) or train inside "
                          "sf::comm::run_ranks",
                          parallel_mode_name(mode)));
  }
  traintest::ParallelContextGuard guard({.parallel_mode = ParallelMode::kDataParallel});
  EXPECT_THAT(invalid_argument_of([&] { nn::DistributedGradReducer r(net.trainable_params()); }),
              HasSubstr("DistributedGradReducer: parallel_mode data_parallel needs ranks"));
  EXPECT_THAT(invalid_argument_of([&] {
                value_and_grad([&](GraphBuilder& b, const std::vector<Value>& in) { return net(b, in[0]); },
                               net.trainable_params());
              }),
              HasSubstr("value_and_grad: parallel_mode data_parallel needs ranks"));
}

TEST(RankMisuse, PipelineStagesWithoutRanksAreRefused) {
  nn::Mlp net(kIn, {8}, kClasses);
  traintest::ParallelContextGuard guard({.pipeline_stages = 2});
  EXPECT_EQ(invalid_argument_of([&] { Model m(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f)); }),
            "Model: pipeline_stages 2 needs ranks: call sf::comm::init(...) or train inside sf::comm::run_ranks");
}

TEST(RankMisuse, DataParallelOnAOneRankJobTrains) {
  traintest::ParallelContextGuard guard({.parallel_mode = ParallelMode::kDataParallel});
  const dataset::Dataset ds = traintest::random_rows(16, 3).batch(8);
  const auto job = job_of(1);
  EXPECT_EQ(count_nonempty(on_ranks(job, [&](int) {
              nn::Mlp net(kIn, {8}, kClasses);
              Model m(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
              m.train(1, ds);
            })),
            0);
}

}  // namespace
}  // namespace sf
