// The strategy checkpoint of the parallel context (strategy_ckpt_save_file /
// strategy_ckpt_load_file): a job saves every op's strategy, another loads them in place of its
// own shard() calls and trains the same; a loaded entry wins over both a primitive's shard() and
// net.shard(name, ...); a bad file is refused on every rank, naming it, before any rank
// communicates.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <shardflow/core/text_file.h>
#include <shardflow/parallel/strategy_file.h>
#include "tests/parallel/semi_auto_world.h"

namespace sf::paralleltest {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / fmt::format("sf_strategy_ckpt_{}_{}", ::getpid(), name)).string();
}

struct CkptRun {
  std::vector<float> losses;  // rank 0's
  std::string sharding;       // rank 0's, printed
};

// Seed 001's network on 8 ranks with `context`, after `shard` puts in-code strategies on it.
CkptRun train(const AutoParallelContext& context, const std::function<void(Seed001Net&)>& shard) {
  CkptRun run;
  traintest::ParallelContextGuard ctx(context);
  traintest::run_world(8, traintest::Wire::kInproc, [&](int rank) {
    set_seed(kSeed);
    Seed001Net net;
    shard(net);
    Model model(net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::SGD>(net.trainable_params(), 0.1f));
    auto log = std::make_shared<traintest::StepLog>(ParameterList{});
    model.train(1, data_for(NetKind::kSeed001), {log});
    if (rank == 0) {
      run.losses = log->losses;
      run.sharding = model.semi_auto_program()->sharding.str(model.semi_auto_program()->global);
    }
  });
  return run;
}

void in_code(Seed001Net& net) {
  net.matmul1.shard({{1, 1}, {1, 8}});
  net.shard("matmul2/MatMul", OpStrategy{{{1, 8}, {8, 1}}, {{8, 1}}});
}

TEST(StrategyCkpt, ASavedFileLoadedThroughTheContextTrainsTheSameModel) {
  const std::string path = temp_path("round_trip.json");
  fs::remove(path);
  const CkptRun saved = train({.parallel_mode = ParallelMode::kSemiAutoParallel, .strategy_ckpt_save_file = path},
                              in_code);
  const StrategyTable table = load_strategy_file(path);
  EXPECT_EQ(table.at("matmul1/MatMul").str(), "in_strategy ((1,1), (1,8))");
  EXPECT_TRUE(table.count("relu2/ReLU")) << "defaults are saved too";

  const CkptRun loaded = train({.parallel_mode = ParallelMode::kSemiAutoParallel, .strategy_ckpt_load_file = path},
                               [](Seed001Net&) {});
  // The same sharding; the file makes the defaults explicit, so only their marks differ.
  std::string want = saved.sharding;
  for (size_t at; (at = want.find(" (default)")) != std::string::npos;) want.erase(at, 10);
  EXPECT_EQ(loaded.sharding, want);
  EXPECT_EQ(loaded.losses, saved.losses);
  fs::remove(path);
}

TEST(StrategyCkpt, ALoadedEntryWinsOverBothKindsOfShardCall) {
  const std::string path = temp_path("override.json");
  write_text_file(path, R"({"version": 1, "strategies": {
    "matmul1/MatMul": {"in_strategy": [[2, 1], [1, 4]]},
    "matmul2/MatMul": {"in_strategy": [[4, 2], [2, 1]]}}})");
  for (ParallelMode mode : {ParallelMode::kSemiAutoParallel, ParallelMode::kAutoParallel}) {
    const CkptRun run = train({.parallel_mode = mode, .strategy_ckpt_load_file = path}, in_code);
    EXPECT_THAT(run.sharding, HasSubstr("matmul1/MatMul: in_strategy ((2,1), (1,4))")) << parallel_mode_name(mode);
    EXPECT_THAT(run.sharding, HasSubstr("matmul2/MatMul: in_strategy ((4,2), (2,1))")) << parallel_mode_name(mode);
  }
  fs::remove(path);
}

TEST(StrategyCkpt, ABadFileIsRefusedOnEveryRankBeforeAnyCommunication) {
  const std::string path = temp_path("unknown_op.json");
  write_text_file(path, R"({"version": 1, "strategies": {"matmul9/MatMul": {"in_strategy": [[8, 1], [1, 1]]}}})");
  traintest::ParallelContextGuard ctx(
      {.parallel_mode = ParallelMode::kSemiAutoParallel, .strategy_ckpt_load_file = path});
  std::vector<std::string> errors(8);
  // Each rank fails on its own: had one started a collective, the others would wait on it.
  traintest::run_world(8, traintest::Wire::kInproc, [&](int rank) {
    Seed001Net net;
    Model model(net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::SGD>(net.trainable_params(), 0.1f));
    try {
      model.train(1, data_for(NetKind::kSeed001));
    } catch (const InvalidArgument& e) {
      errors[rank] = e.what();
    }
    EXPECT_EQ(model.semi_auto_program(), nullptr) << "rank " << rank << " built its program";
  });
  for (int rank = 0; rank < 8; ++rank)
    EXPECT_THAT(errors[rank], HasSubstr("strategy file '" + path + "': strategy in_strategy ((8,1), (1,1)) for "
                                        "'matmul9/MatMul': the network has no op of that name"))
        << "rank " << rank;
  fs::remove(path);
}

}  // namespace
}  // namespace sf::paralleltest
