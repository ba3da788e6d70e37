// sfckpt convert's placement by a strategy file (tools/sfckpt/strategy_placement.h), against
// what semi-auto parallel itself does: for seed 002's and seed 001's networks sharded by
// several strategy tables on 8, 6 and 4 devices, the "parameters" section parameter_places
// writes (parallel/parameter_places.h) still loads as the same table, and the layout sfckpt
// gives each parameter has exactly the boxes shard_graph cuts it to — so each rank of the job
// finds its block stored whole. Optimizer state follows its parameter; a parameter whose op
// has no strategy in the file stays whole, with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <shardflow/core/text_file.h>
#include <shardflow/ops/builder.h>
#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/parameter_places.h>
#include <shardflow/parallel/shard_box.h>
#include <shardflow/parallel/strategy_file.h>
#include "tools/sfckpt/strategy_placement.h"
#include "tools/sfckpt/usage_error.h"

namespace sf {
namespace {

std::string temp_file(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "sf_strategy_placement";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A manifest listing these tensors (placement reads names and shapes only).
ckpt::Manifest manifest_of(const std::vector<std::pair<std::string, Shape>>& tensors) {
  ckpt::Manifest m;
  for (const auto& [name, shape] : tensors) {
    ckpt::TensorEntry t;
    t.name = name;
    t.shape = shape;
    t.layout = TensorLayout::replicated(DeviceMatrix({1}), static_cast<int>(shape.size()));
    m.tensors.push_back(t);
  }
  return m;
}

// The boxes of every rank of `layout`, sorted: the blocks a checkpoint under it stores.
std::vector<std::string> boxes(const TensorLayout& layout, const Shape& shape) {
  std::vector<std::string> out;
  for (int r = 0; r < layout.mesh().device_count(); ++r) out.push_back(shard_box(layout, shape, r).str());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Net {
  Graph g;
  std::vector<int> outputs;
};

// Seed 002 (24 rows, so that 3 divides them): x (24, 32) -> matmul w (32, 16) -> relu -> matmul2 w2 (16, 16).
Net seed002() {
  Net n;
  GraphBuilder b(n.g);
  const Value h = b.op("MatMul", {b.input("x", {24, 32}), b.parameter("w", {32, 16})}, {}, "matmul/MatMul");
  const Value r = b.op("ReLU", {h}, {}, "relu/ReLU");
  const Value y = b.op("MatMul", {r, b.parameter("w2", {16, 16})}, {}, "matmul2/MatMul");
  n.outputs = {b.reduce_sum(y).id};
  return n;
}

// Seed 001's first layer: x (16, 784) times w (784, 512), both by seed 001's Layout calls.
Net seed001() {
  Net n;
  GraphBuilder b(n.g);
  const Value y =
      b.op("MatMul", {b.input("x", {16, 784}), b.parameter("fc1_weight", {784, 512})}, {}, "matmul1/MatMul");
  n.outputs = {b.reduce_sum(y).id};
  return n;
}

struct Case {
  const char* label;
  Net (*net)();
  StrategyTable table;
  int64_t devices;
};

std::vector<Case> cases() {
  const Layout seed({2, 2, 2}, {"dp", "sp", "mp"});
  return {
      {"seed 002 on 8", seed002, {{"matmul/MatMul", {{{2, 4}, {4, 1}}}}, {"matmul2/MatMul", {{{2, 4}, {4, 1}}}}}, 8},
      {"columns then rows on 8", seed002,
       {{"matmul/MatMul", {{{1, 1}, {1, 8}}}}, {"matmul2/MatMul", {{{1, 8}, {8, 1}}}}}, 8},
      {"2x2 blocks, fewer devices than the job", seed002,
       {{"matmul/MatMul", {{{1, 2}, {2, 2}}}}, {"matmul2/MatMul", {{{2, 1}, {1, 2}}}}}, 8},
      {"6 devices", seed002, {{"matmul/MatMul", {{{3, 2}, {2, 1}}}}, {"matmul2/MatMul", {{{3, 1}, {1, 2}}}}}, 6},
      {"4 devices, defaults for matmul2", seed002, {{"matmul/MatMul", {{{1, 4}, {4, 1}}}}}, 4},
      {"seed 001's layouts on 8", seed001,
       {{"matmul1/MatMul", {{seed("mp", {"sp", "dp"}), seed({"sp", "dp"}, "None")}}}}, 8},
  };
}

TEST(StrategyPlacement, ParametersGetTheBlocksSemiAutoParallelCutsThemTo) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    const Net net = c.net();
    const GraphSharding gs = shard_graph(net.g, net.outputs, c.table, c.devices);
    const ParameterPlaces places = parameter_places(net.g, gs);
    const std::string file = temp_file("s.json");
    write_text_file(file, strategy_json_with_parameters(c.table, places));
    // Training reads the same table from it: the section is ignored.
    EXPECT_EQ(strategy_json(load_strategy_file(file)), strategy_json(c.table));

    std::vector<std::pair<std::string, Shape>> tensors;
    for (const auto& [name, place] : places) {
      const Shape shape = net.g.node(net.g.find(name)).shape;
      tensors.push_back({name, shape});
      tensors.push_back({"moments." + name, shape});
    }
    tensors.push_back({"global_step", {}});
    tensors.push_back({"rank_local.w", {32, 16}});  // a rank's row, never a parameter's state
    const sfckpt::StrategyPlacement placed =
        sfckpt::place_by_strategy_file(file, manifest_of(tensors), static_cast<int>(c.devices));

    int params = 0;
    for (const auto& [name, place] : places) {
      const Node& p = net.g.node(net.g.find(name));
      // The table names only some ops: the others' defaults are not in the file.
      if (!c.table.count(place.op)) {
        EXPECT_NE(std::find(placed.whole.begin(), placed.whole.end(),
                            name + " (its op '" + place.op + "' has no strategy in the file)"),
                  placed.whole.end())
            << name;
        continue;
      }
      ++params;
      ASSERT_TRUE(placed.layouts.count(name)) << name;
      const TensorLayout& mine = placed.layouts.at(name);
      EXPECT_EQ(mine.mesh().device_count(), c.devices) << name;
      EXPECT_EQ(boxes(mine, p.shape), boxes(gs.at(p.id).layout, p.shape)) << name << ": " << mine.str() << " vs "
                                                                          << gs.at(p.id).layout.str();
      ASSERT_TRUE(placed.layouts.count("moments." + name));
      EXPECT_EQ(placed.layouts.at("moments." + name), mine);
    }
    EXPECT_GE(params, 1);
    EXPECT_EQ(placed.layouts.count("global_step"), 0u);
    EXPECT_EQ(placed.layouts.count("rank_local.w"), 0u);
    EXPECT_NE(std::find(placed.whole.begin(), placed.whole.end(),
                        "global_step (not named in the file's \"parameters\")"),
              placed.whole.end());
  }
}

TEST(StrategyPlacement, TheParametersSectionNamesTheFirstOpReadingEachParameter) {
  const Net net = seed002();
  const StrategyTable table{{"matmul/MatMul", {{{2, 4}, {4, 1}}}}};
  const GraphSharding gs = shard_graph(net.g, net.outputs, table, 8);
  const std::string text = strategy_json_with_parameters(table, parameter_places(net.g, gs));
  EXPECT_EQ(text,
            "{\n  \"version\": 1,\n  \"strategies\": {\n    \"matmul/MatMul\": {\"in_strategy\":[[2,4],[4,1]]}\n  },\n"
            "  \"parameters\": {\n    \"w\": {\"op\":\"matmul/MatMul\",\"input\":1},\n"
            "    \"w2\": {\"op\":\"matmul2/MatMul\",\"input\":1}\n  }\n}\n");
}

TEST(StrategyPlacement, SeedLayoutsAreKeptAsWrittenAndGiveTheSameRanksTheSameBlocks) {
  const Net net = seed001();
  const Layout seed({2, 2, 2}, {"dp", "sp", "mp"});
  const StrategyTable table{{"matmul1/MatMul", {{seed("mp", {"sp", "dp"}), seed({"sp", "dp"}, "None")}}}};
  const GraphSharding gs = shard_graph(net.g, net.outputs, table, 8);
  const std::string file = temp_file("seed001.json");
  write_text_file(file, strategy_json_with_parameters(table, parameter_places(net.g, gs)));
  const sfckpt::StrategyPlacement placed =
      sfckpt::place_by_strategy_file(file, manifest_of({{"fc1_weight", {784, 512}}}), 8);
  const TensorLayout& mine = placed.layouts.at("fc1_weight");
  for (int r = 0; r < 8; ++r)
    EXPECT_EQ(shard_box(mine, {784, 512}, r), shard_box(gs.at(net.g.find("fc1_weight")).layout, {784, 512}, r)) << r;
}

TEST(StrategyPlacement, AFileThatDoesNotFitIsRefusedNamingItAndTheRule) {
  const std::string file = temp_file("bad.json");
  write_text_file(file, R"({"strategies": {"m/MatMul": {"in_strategy": [[2, 1], [1, 3]]}},
                            "parameters": {"w": {"op": "m/MatMul", "input": 1}}})");
  const ckpt::Manifest m = manifest_of({{"w", {4, 6}}});
  EXPECT_NO_THROW(sfckpt::place_by_strategy_file(file, m, 6));
  try {
    sfckpt::place_by_strategy_file(file, manifest_of({{"w", {4, 4}}}), 6);
    ADD_FAILURE() << "a split of 3 over a dim of 4 was placed";
  } catch (const sfckpt::UsageError& e) {
    const std::string where = "strategy file '" + file + "', parameter 'w', in_strategy[1] of 'm/MatMul'";
    EXPECT_EQ(std::string(e.what()).find(where), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not divide dim 1 of size 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(sfckpt::place_by_strategy_file(file, m, 4), sfckpt::UsageError);  // 3 devices do not divide 4
  EXPECT_THROW(sfckpt::place_by_strategy_file(file, manifest_of({{"v", {4, 6}}}), 6), sfckpt::UsageError);
}

}  // namespace
}  // namespace sf
