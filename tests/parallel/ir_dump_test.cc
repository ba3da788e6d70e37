// The parallel IR dump: seed 002's network trained on 8 virtual ranks with SaveGraphs writes,
// for every rank, the global graph with matmul's strategy ((2, 4), (4, 1)) and the local graph
// with the AllReduce of matmul's partial sums over group 0-1-2-3 (ranks 0-3) or 4-5-6-7
// (ranks 4-7), as the seed's 18_execute_*.ir shows; the DOT files parse (with Graphviz's
// `dot` where installed, else a check of the DOT grammar this printer uses).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include <shardflow/core/text_file.h>
#include <shardflow/parallel/ir_dump.h>
#include "tests/parallel/semi_auto_world.h"
#include <shardflow/train/save_graphs.h>

namespace sf::paralleltest {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr int kRanks = 8;

// An empty directory for one test's dump; the pid keeps concurrent runs of this suite (other
// build trees) apart.
std::string fresh_root(const std::string& name) {
  const std::string root = (fs::temp_directory_path() / fmt::format("sf_ir_dump_{}_{}", name, ::getpid())).string();
  fs::remove_all(root);
  return root;
}

// Trains seed 002's network for its 20 steps on 8 ranks with SaveGraphs; returns the dump's root.
std::string dump_seed002(const std::string& name) {
  const std::string root = fresh_root(name);
  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  traintest::run_world(kRanks, traintest::Wire::kInproc, [&](int) {
    set_seed(kSeed);
    Seed002Net net;
    net.matmul.shard({{2, 4}, {4, 1}});
    Model model(net, std::make_shared<nn::MSELoss>(), std::make_shared<nn::Momentum>(net.trainable_params(), 0.2f, 0.1f));
    auto save = std::make_shared<SaveGraphs>(model, root);
    model.train(1, data_for(NetKind::kSeed002), {save});
    EXPECT_EQ(save->files().size(), 4u);
  });
  return root;
}

std::string read(const std::string& root, int rank, const std::string& file) {
  return read_text_file(root + "/rank_" + std::to_string(rank) + "/" + file);
}

// The DOT this printer writes: a digraph of `nX [label="..."...];` and `nX -> nY;` lines whose
// edges join declared nodes. Graphviz's own parser, when installed, checks it too.
void expect_dot_parses(const std::string& path) {
  const std::string dot = read_text_file(path);
  std::istringstream lines(dot);
  std::string line;
  std::getline(lines, line);
  EXPECT_TRUE(std::regex_match(line, std::regex(R"(digraph "[a-z_]+" \{)"))) << line;
  const std::regex node(R"(  n(\d+) \[label="(?:[^"\\]|\\.)*"(?:, [a-z]+=(?:"[^"]*"|[a-z]+))*\];)");
  const std::regex edge(R"(  n(\d+) -> n(\d+);)");
  std::set<std::string> declared;
  int edges = 0;
  bool closed = false;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (line.rfind("  node [", 0) == 0) continue;
    if (std::regex_match(line, m, node)) {
      declared.insert(m[1]);
    } else if (std::regex_match(line, m, edge)) {
      EXPECT_TRUE(declared.count(m[1]) && declared.count(m[2])) << path << ": edge to an undeclared node: " << line;
      ++edges;
    } else {
      EXPECT_EQ(line, "}") << path;
      closed = true;
    }
  }
  EXPECT_TRUE(closed) << path;
  EXPECT_GT(edges, 0) << path;
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    EXPECT_EQ(std::system(("dot -Tsvg -o /dev/null '" + path + "'").c_str()), 0) << path;
  }
}

TEST(IrDump, Seed002ShowsTheAllReduceOverItsGroupOnEveryRank) {
  const std::string root = dump_seed002("seed002");
  for (int rank = 0; rank < kRanks; ++rank) {
    for (const char* f : {"step_parallel_begin.ir", "step_parallel_begin.dot", "execute.ir", "execute.dot"})
      EXPECT_TRUE(fs::exists(root + "/rank_" + std::to_string(rank) + "/" + f)) << "rank " << rank << " " << f;

    // The global graph: matmul with the user's strategy, relu and matmul2 with the default.
    const std::string begin = read(root, rank, "step_parallel_begin.ir");
    EXPECT_TRUE(std::regex_search(
        begin, std::regex(R"(= MatMul\(%\d+, %\d+\) [^\n]*# matmul/MatMul\n    \{in_strategy: \(\(2, 4\), \(4, 1\)\), out_strategy: None\} device matrix \(2,4,1\)\n)")))
        << begin;
    EXPECT_TRUE(std::regex_search(begin, std::regex(R"(# relu/ReLU\n    \{in_strategy: \(\(8, 1\),\), out_strategy: None\} \(default\))")))
        << begin;

    // The local graph: x is (2,4)'s block (8, 8) of (16, 32), and matmul's partial sums are
    // AllReduced over the ranks sharing its row block, as the seed's IR shows.
    const std::string exec = read(root, rank, "execute.ir");
    EXPECT_THAT(exec, HasSubstr("= Input() {dtype='f32', shape=(8, 8)} : f32(8, 8)  # input0"));
    const std::string ranks = rank < 4 ? "0, 1, 2, 3" : "4, 5, 6, 7";
    const std::string group = rank < 4 ? "0-1-2-3" : "4-5-6-7";
    EXPECT_TRUE(std::regex_search(
        exec, std::regex("= AllReduce\\(%\\d+\\) \\{[^\n]*group='" + group + "'[^\n]*: f32\\(8, 16\\)  # matmul/MatMul/out/AllReduce\n"
                         "    \\{group_ranks: " + group + ", rank_list: \\(" + ranks + "\\)\\}\n")))
        << exec;
    EXPECT_THAT(exec, HasSubstr("# group " + group + ": rank_list (" + ranks + ")"));
  }
  const std::string exec0 = read(root, 0, "execute.dot");
  EXPECT_THAT(exec0, HasSubstr("matmul/MatMul/out/AllReduce\\nf32(8, 16)\\ngroup_ranks: 0-1-2-3, rank_list: (0, 1, 2, 3)"));
  for (const char* f : {"step_parallel_begin.dot", "execute.dot"}) expect_dot_parses(root + "/rank_0/" + f);
  fs::remove_all(root);
}

// Seed 001's loop: value_and_grad of the network, then the optimizer; the GradFunction's
// program gives the same dump as Model::train's.
TEST(IrDump, TheFunctionalLoopDumpsItsProgram) {
  const std::string root = fresh_root("functional");
  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  traintest::run_world(kRanks, traintest::Wire::kInproc, [&](int) {
    set_seed(kSeed);
    Seed002Net net;
    net.matmul.shard({{2, 4}, {4, 1}});
    nn::MSELoss loss_fn;
    nn::SGD optimizer(net.trainable_params(), 0.1f);
    GradFunction grad_fn = value_and_grad(
        [&](GraphBuilder& b, const std::vector<Value>& in) { return loss_fn(b, net(b, in[0]), in[1]); }, net,
        net.trainable_params());
    EXPECT_EQ(grad_fn.semi_auto_program(), nullptr);
    const dataset::Dataset data = data_for(NetKind::kSeed002);
    dataset::BatchIterator it = data.iterator(0);
    const std::vector<Tensor>* batch = it.next();
    optimizer.step(grad_fn(*batch).grads);
    ASSERT_NE(grad_fn.semi_auto_program(), nullptr);
    EXPECT_EQ(save_graphs(*grad_fn.semi_auto_program(), root).size(), 4u);
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    const std::string group = rank < 4 ? "0-1-2-3" : "4-5-6-7";
    EXPECT_THAT(read(root, rank, "execute.ir"), HasSubstr("group='" + group + "'"));
    EXPECT_THAT(read(root, rank, "step_parallel_begin.ir"),
                HasSubstr("{in_strategy: ((2, 4), (4, 1)), out_strategy: None} device matrix (2,4,1)"));
  }
  fs::remove_all(root);
}

// MindSpore's set_context(save_graphs=True, save_graphs_path=...): the context alone makes every
// rank's step write its dump when its program is built.
TEST(IrDump, TheContextsSaveGraphsWritesTheDumpWithoutACallback) {
  const std::string root = fresh_root("context");
  traintest::ParallelContextGuard ctx(
      {.parallel_mode = ParallelMode::kSemiAutoParallel, .save_graphs = true, .save_graphs_path = root});
  traintest::run_world(kRanks, traintest::Wire::kInproc, [&](int) {
    set_seed(kSeed);
    Seed002Net net;
    net.matmul.shard({{2, 4}, {4, 1}});
    Model model(net, std::make_shared<nn::MSELoss>(), std::make_shared<nn::SGD>(net.trainable_params(), 0.1f));
    model.train(1, data_for(NetKind::kSeed002));
  });
  for (int rank = 0; rank < kRanks; ++rank) {
    const std::string group = rank < 4 ? "0-1-2-3" : "4-5-6-7";
    EXPECT_THAT(read(root, rank, "execute.ir"), HasSubstr("group='" + group + "'"));
    EXPECT_TRUE(fs::exists(root + "/rank_" + std::to_string(rank) + "/step_parallel_begin.dot")) << rank;
  }
  fs::remove_all(root);
  try {
    set_auto_parallel_context({.save_graphs = true, .save_graphs_path = ""});
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("save_graphs needs a save_graphs_path"));
  }
}

TEST(IrDump, LayoutStrategiesPrintAsWritten) {
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  EXPECT_EQ(strategy_tuple_str({layout("mp", {"sp", "dp"}), layout({"sp", "dp"}, "None")}),
            "(layout('mp', ('sp', 'dp')), layout(('sp', 'dp'), 'None'))");
  EXPECT_EQ(strategy_tuple_str({{4, 1}}), "((4, 1),)");
}

TEST(IrDump, SaveGraphsOutsideSemiAutoModeIsRefused) {
  Seed002Net net;
  Model model(net, std::make_shared<nn::MSELoss>(), std::make_shared<nn::SGD>(net.trainable_params(), 0.1f));
  auto save = std::make_shared<SaveGraphs>(model, (fs::temp_directory_path() / fmt::format("sf_ir_dump_refused_{}", ::getpid())).string());
  try {
    model.train(1, data_for(NetKind::kSeed002), {save});
    FAIL() << "no error";
  } catch (const Error& e) {  // raised in a callback, carried out of the runtime
    EXPECT_THAT(e.what(), HasSubstr("SaveGraphs: the parallel IR exists in semi_auto_parallel and auto_parallel modes "
                                    "only; the model trains in stand_alone mode"));
  }
}

}  // namespace
}  // namespace sf::paralleltest
