// Strategy files: a table of tuple and layout strategies (with an out_strategy) survives a save
// and a load; a file that changes seed 001's sharding trains the same model as 1 device (loss
// per step, and every parameter gathered from its blocks); bad files are refused with messages
// naming the file, the op and the rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <shardflow/core/text_file.h>
#include <shardflow/parallel/strategy_file.h>
#include "tests/parallel/semi_auto_world.h"
#include <shardflow/train/gather_parameters.h>

namespace sf::paralleltest {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace strategy_file_test {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// The pid keeps concurrent runs of this suite (other build trees) apart.
std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / fmt::format("sf_strategy_{}_{}", ::getpid(), name)).string();
}

std::string write(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  write_text_file(path, text);
  return path;
}

StrategyTable seed001_table() {
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  return {{"matmul1/MatMul",
           OpStrategy{{layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")}, {layout({"mp", "sp", "dp"}, "None")}}},
          {"relu1/ReLU", OpStrategy{{{4, 1}}}},
          {"matmul2/MatMul", OpStrategy{{{2, 4}, {4, 1}}, {{8, 1}}}}};
}

TEST(StrategyFile, TuplesAndLayoutsSurviveSaveAndLoad) {
  const StrategyTable table = seed001_table();
  const std::string path = temp_path("round_trip.json");
  save_strategy_file(path, table);
  const StrategyTable loaded = load_strategy_file(path);
  ASSERT_EQ(loaded.size(), table.size());
  for (const auto& [op, s] : table) {
    const OpStrategy& l = loaded.at(op);
    EXPECT_EQ(l.str(), s.str()) << op;  // the spelling too: "layout('mp', ('sp', 'dp'))"
    ASSERT_EQ(l.in.size(), s.in.size());
    for (size_t i = 0; i < s.in.size(); ++i) {
      EXPECT_EQ(l.in[i].is_layout(), s.in[i].is_layout()) << op << " input " << i;
      if (s.in[i].is_layout()) {
        EXPECT_EQ(l.in[i].layout(), s.in[i].layout()) << op << " input " << i;
      }
    }
  }
  EXPECT_EQ(strategy_json(loaded), read_text_file(path));
  EXPECT_THAT(read_text_file(path),
              HasSubstr(R"("matmul1/MatMul": {"in_strategy":[{"device_matrix":[2,2,2],"alias_name":["dp","sp","mp"],)"
                        R"("tensor_map":["mp",["sp","dp"]]},)"));
}

// Seed 001's network with the strategies of a file; returns each rank's losses and the
// parameters gathered from the blocks (rank 0's), and rank 0's printed sharding.
struct FileRun {
  std::vector<std::vector<float>> losses;
  std::vector<Tensor> params;
  std::string sharding;
};

FileRun train_from_file(const StrategyTable& table) {
  FileRun run;
  run.losses.resize(8);
  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  traintest::run_world(8, traintest::Wire::kInproc, [&](int rank) {
    set_seed(kSeed);
    Seed001Net net;
    for (const auto& [op, s] : table) net.shard(op, s);
    Model model(net, std::make_shared<nn::CrossEntropyLoss>(), std::make_shared<nn::SGD>(net.trainable_params(), 0.1f));
    auto log = std::make_shared<traintest::StepLog>(ParameterList{});
    model.train(1, data_for(NetKind::kSeed001), {log});
    run.losses[rank] = log->losses;
    std::vector<Tensor> whole = gather_parameters(net.trainable_params());
    if (rank == 0) {
      run.params = whole;
      run.sharding = model.semi_auto_program()->sharding.str(model.semi_auto_program()->global);
    }
  });
  return run;
}

TEST(StrategyFile, ALoadedFileChangesTheShardingAndTrainingStillEqualsOneDevice) {
  // Column split for matmul1, a 2x4 block split for relu1, matmul2 split on its reduce dim with
  // its partial sums reduce-scattered over the rows, matmul3 on a layout.
  const std::string path = write("column_reduce.json", R"({"version": 1, "strategies": {
    "matmul1/MatMul": {"in_strategy": [[1, 1], [1, 8]]},
    "relu1/ReLU": {"in_strategy": [[2, 4]]},
    "matmul2/MatMul": {"in_strategy": [[1, 8], [8, 1]], "out_strategy": [[8, 1]]},
    "matmul3/MatMul": {"in_strategy": [
        {"device_matrix": [4, 2], "alias_name": ["dp", "mp"], "tensor_map": ["dp", "mp"]},
        {"device_matrix": [4, 2], "alias_name": ["dp", "mp"], "tensor_map": ["mp", "None"]}]}}})");
  const StrategyTable table = load_strategy_file(path);
  const FileRun run = train_from_file(table);
  EXPECT_THAT(run.sharding, HasSubstr("matmul1/MatMul: in_strategy ((1,1), (1,8))"));
  EXPECT_THAT(run.sharding, HasSubstr("matmul2/MatMul: in_strategy ((1,8), (8,1)) out_strategy ((8,1),)"));

  const Case c = make_case<Seed001Net>("seed001", [](Seed001Net&) {});
  const TrainRun& ref = one_device(c);
  ASSERT_EQ(ref.losses[0].size(), static_cast<size_t>(kSteps));
  for (size_t r = 0; r < run.losses.size(); ++r) {
    ASSERT_EQ(run.losses[r].size(), ref.losses[0].size()) << "rank " << r;
    for (size_t s = 0; s < ref.losses[0].size(); ++s)
      ASSERT_NEAR(run.losses[r][s], ref.losses[0][s], 1e-5 * std::abs(ref.losses[0][s])) << "rank " << r << " step " << s;
  }
  ASSERT_EQ(run.params.size(), ref.params[0].size());
  for (size_t i = 0; i < run.params.size(); ++i) {
    const Tensor& want = ref.params[0][i].value();
    ASSERT_EQ(run.params[i].shape(), want.shape()) << ref.params[0][i].name();
    for (int64_t k = 0; k < want.numel(); ++k)
      ASSERT_NEAR(run.params[i].f32()[k], want.f32()[k], 2e-5) << ref.params[0][i].name() << " element " << k;
  }
}

// The message of the refusal of a file with `text`.
std::string refusal(const std::string& name, const std::string& text) {
  const std::string path = write(name, text);
  try {
    load_strategy_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(StrategyFile, BadFilesAreRefusedNamingTheFileTheOpAndTheRule) {
  const std::string p = temp_path("");
  EXPECT_THAT(refusal("not_json.json", "{\"strategies\": {"), HasSubstr("strategy file '" + p + "not_json.json': not JSON"));
  // A number no double holds is nlohmann's out_of_range, not a parse_error: refused alike.
  EXPECT_THAT(refusal("huge_number.json", "{\"strategies\": {}, \"x\": 1e400}"),
              HasSubstr("strategy file '" + p + "huge_number.json': not JSON"));
  EXPECT_THAT(refusal("no_table.json", "[1, 2]"),
              HasSubstr("strategy file '" + p + "no_table.json': expected an object {\"version\": 1, \"strategies\""));
  EXPECT_THAT(refusal("version.json", R"({"version": 2, "strategies": {}})"),
              HasSubstr("'" + p + "version.json': version 2 is not supported (this reads version 1)"));
  EXPECT_THAT(refusal("no_in.json", R"({"strategies": {"fc1/MatMul": {"out_strategy": [[8, 1]]}}})"),
              HasSubstr("strategy file '" + p + "no_in.json', op 'fc1/MatMul': in_strategy is missing"));
  EXPECT_THAT(refusal("key.json", R"({"strategies": {"fc1/MatMul": {"in_strategy": [[8, 1]], "in_strategies": 1}}})"),
              HasSubstr("op 'fc1/MatMul': unknown key 'in_strategies' (in_strategy, out_strategy)"));
  EXPECT_THAT(refusal("zero.json", R"({"strategies": {"fc1/MatMul": {"in_strategy": [[8, 0], [1, 1]]}}})"),
              HasSubstr("op 'fc1/MatMul', in_strategy[0]: a tuple strategy must be a non-empty list of positive "
                        "integers, got [8,0]"));
  EXPECT_THAT(refusal("axis.json", R"({"strategies": {"fc1/MatMul": {"in_strategy": [
      {"device_matrix": [2, 4], "alias_name": ["dp", "mp"], "tensor_map": ["dp", "tp"]}]}}})"),
              HasSubstr("op 'fc1/MatMul', in_strategy[0]: layout('dp', 'tp') on Layout((2,4), ('dp', 'mp')): "
                        "unknown axis name 'tp'"));
  EXPECT_THAT(refusal("twice.json", R"({"strategies": {"fc1/MatMul": {"in_strategy": [
      {"device_matrix": [2, 4], "alias_name": ["dp", "mp"], "tensor_map": ["dp", ["mp", "dp"]]}]}}})"),
              HasSubstr("axis 'dp' is used twice in one tensor"));
  EXPECT_THAT(refusal("no_names.json", R"({"strategies": {"fc1/MatMul": {"in_strategy": [
      {"device_matrix": [2, 4], "tensor_map": ["dp", "mp"]}]}}})"),
              HasSubstr("op 'fc1/MatMul', in_strategy[0]: a layout needs 'alias_name'"));
  EXPECT_THAT(refusal("mixed.json", R"({"strategies": {"fc1/MatMul": {"in_strategy": [[2, 4],
      {"device_matrix": [2, 4], "alias_name": ["dp", "mp"], "tensor_map": ["mp", "None"]}]}}})"),
              HasSubstr("op 'fc1/MatMul', in_strategy[1]: an op takes tuples for all its tensors or layouts for all "
                        "of them, not both"));
  try {
    load_strategy_file(temp_path("no_such_file.json"));
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot open '" + p + "no_such_file.json': no such file"));
  }
}

TEST(StrategyFile, ATableIsCheckedAgainstTheNetworkBeforeAnyRankRuns) {
  Seed001Net net;
  net.trainable_params();
  Graph g;
  GraphBuilder b(g);
  const Value loss = nn::CrossEntropyLoss()(b, net(b, b.input("input0", {16, 8, 8})), b.input("input1", {16}, DType::kI32));
  auto message = [&](const StrategyTable& table) {
    try {
      check_strategy_file("s.json", table, g, {loss.id}, 8);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(seed001_table()), "no error");
  EXPECT_THAT(message({{"matmul9/MatMul", OpStrategy{{{8, 1}, {1, 1}}}}}),
              HasSubstr("strategy file 's.json': strategy in_strategy ((8,1), (1,1)) for 'matmul9/MatMul': the "
                        "network has no op of that name"));
  EXPECT_THAT(message({{"matmul3/MatMul", OpStrategy{{{1, 1}, {1, 4}}}}}),
              HasSubstr("strategy file 's.json': MatMul 'matmul3/MatMul' input 1: (1,4) does not divide dim 1 "
                        "of size 10"));
}

// Found by trying: each of these once killed the process (SIGFPE from an overflowed device
// count, SIGSEGV from recursion on deep nesting) or printed a line megabytes long.
TEST(StrategyFile, HostileFilesGetOneShortLineNotASignal) {
  Seed001Net net;
  net.trainable_params();
  Graph g;
  GraphBuilder b(g);
  const Value loss = nn::CrossEntropyLoss()(b, net(b, b.input("input0", {16, 8, 8})), b.input("input1", {16}, DType::kI32));
  auto refused = [&](const std::string& name, const std::string& text) {
    try {
      check_strategy_file(name, load_strategy_file(write(name, text)), g, {loss.id}, 8);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string huge = refused("huge.json", R"({"strategies": {"relu1/ReLU": {"in_strategy": [[4294967296, 4294967296]]}}})");
  EXPECT_THAT(huge, HasSubstr("device matrix (4294967296,4294967296): spans more than 16777216 devices"));
  EXPECT_THAT(refused("huge_layout.json", R"({"strategies": {"relu1/ReLU": {"in_strategy": [{"device_matrix":
      [4294967296, 4294967296, 2], "alias_name": ["a", "b", "c"], "tensor_map": ["a", "b"]}]}}})"),
              HasSubstr("op 'relu1/ReLU', in_strategy[0]: device matrix (4294967296,4294967296,2): spans more than"));
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  EXPECT_THAT(refused("deep.json", R"({"strategies": {"relu1/ReLU": {"in_strategy": )" + deep + "}}}"),
              HasSubstr("deep.json': JSON nested more than 16 levels deep"));
  std::string ones = "1";
  for (int i = 0; i < 1000000; ++i) ones += ",1";
  const std::string longest = refused("long.json", R"({"strategies": {"relu1/ReLU": {"in_strategy": [[)" + ones + "]]}}}");
  EXPECT_THAT(longest, HasSubstr("in_strategy[0]: a tuple strategy has 1000001 entries, more than 32"));
  for (const std::string& m : {huge, longest}) EXPECT_LT(m.size(), 300u) << m.substr(0, 300);
  try {
    load_strategy_file("/dev/zero");  // endless: refused before reading
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read '/dev/zero': not a regular file"));
  }
}

}  // namespace strategy_file_test
}  // namespace
}  // namespace sf::paralleltest
