#include "examples/strategy_options.h"

#include <fmt/format.h>

#include <shardflow/parallel/strategy_file.h>

namespace sf::examples {

CLI::Option* add_strategy_options(CLI::App& app, StrategyOptions& o) {
  CLI::Option* file =
      app.add_option("--strategy-file", o.strategy_file, "load the ops' strategies from this JSON file");
  app.add_option("--save-strategy-file", o.save_strategy_file, "write the strategies used to this JSON file");
  app.add_flag("--explain", o.explain, "print each op's strategy and where it came from");
  return file;
}

StrategyTable load_strategies(const StrategyOptions& o, const GlobalGraph& global_graph, int devices) {
  if (o.strategy_file.empty()) return {};
  StrategyTable table = load_strategy_file(o.strategy_file);
  Graph g;
  const int loss = global_graph(g);
  check_strategy_file(o.strategy_file, table, g, {loss}, devices);
  return table;
}

std::string explain_semi_auto(const StrategyTable& used, const StrategyTable& given, const std::string& given_by) {
  std::string out = "strategies: semi-auto parallel\n";
  for (const auto& [op, strategy] : used)
    out += fmt::format("{}: {} — {}\n", op, strategy.str(),
                       given.count(op) ? "given by " + given_by : std::string("the default (the batch over the devices)"));
  return out;
}

std::string explain(const SemiAutoProgram& program, const StrategyTable& given, const std::string& given_by) {
  if (!program.search.mode.empty()) return program.search.explain();
  return explain_semi_auto(strategies_of(program.global, program.sharding), given, given_by);
}

}  // namespace sf::examples
