// --strategy-file FILE, --save-strategy-file FILE and --explain, as every operator-level and
// (semi-)auto parallel example takes them: the file's strategies replace the example's shard()
// calls and are checked against the network's global graph before any rank communicates; the
// strategies used, defaults included, are written to the save file; --explain prints each op's
// strategy and where it came from (the search's reasons in auto parallel, docs/auto_parallel.md).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/sharding/op_strategy.h>
#include <shardflow/train/semi_auto_step.h>

namespace sf::examples {

struct StrategyOptions {
  std::string strategy_file;       // --strategy-file
  std::string save_strategy_file;  // --save-strategy-file
  bool explain = false;            // --explain
};

// Adds the three options; returns --strategy-file, for an example's options that exclude it.
CLI::Option* add_strategy_options(CLI::App& app, StrategyOptions& o);

// Builds the network and its loss on global shapes into `g`, as every rank builds them before
// sharding, with no strategies set; returns the loss node's id.
using GlobalGraph = std::function<int(Graph& g)>;

// --strategy-file: its strategies, checked against the global graph on `devices` ranks; empty
// without a file.
StrategyTable load_strategies(const StrategyOptions& o, const GlobalGraph& global_graph, int devices);

// --explain in semi-auto parallel: one line per op of `used`, its strategy and whether it was
// given (`given_by`: "shard()", "the strategy file") or is the default.
std::string explain_semi_auto(const StrategyTable& used, const StrategyTable& given, const std::string& given_by);

// --explain after the first step built `program`: the search's reasons in auto parallel, else
// explain_semi_auto of the strategies it ran with.
std::string explain(const SemiAutoProgram& program, const StrategyTable& given, const std::string& given_by);

}  // namespace sf::examples
