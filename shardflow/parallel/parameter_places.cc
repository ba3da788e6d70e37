#include <shardflow/parallel/parameter_places.h>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <shardflow/core/text_file.h>
#include <shardflow/parallel/strategy_file.h>

namespace sf {

ParameterPlaces parameter_places(const Graph& global, const GraphSharding& sharding) {
  ParameterPlaces out;
  // The same walk as shard_graph's for sources: the first consumer in node order, its first
  // input reading the parameter.
  for (int id : sharding.nodes) {
    const Node& n = global.node(id);
    if (n.op != "Parameter") continue;
    for (int c : sharding.nodes) {
      const Node& consumer = global.node(c);
      auto it = std::find(consumer.inputs.begin(), consumer.inputs.end(), id);
      if (it == consumer.inputs.end()) continue;
      out[n.name] = {consumer.name, static_cast<int>(it - consumer.inputs.begin())};
      break;
    }
  }
  return out;
}

std::string strategy_json_with_parameters(const StrategyTable& table, const ParameterPlaces& places) {
  std::string text = strategy_json(table);
  // strategy_json ends with "\n  }\n}\n": the section goes before the final brace.
  const size_t end = text.rfind('}');
  std::string section = ",\n  \"parameters\": {";
  const char* sep = "\n";
  for (const auto& [name, place] : places) {
    section += fmt::format("{}    {}: {{\"op\":{},\"input\":{}}}", sep, nlohmann::json(name).dump(),
                           nlohmann::json(place.op).dump(), place.input);
    sep = ",\n";
  }
  section += "\n  }\n";
  // Drop the newline before the final brace, so the section follows "strategies" directly.
  const size_t before = text.find_last_not_of('\n', end - 1);
  return text.substr(0, before + 1) + section + text.substr(end);
}

void save_strategy_file(const std::string& path, const Graph& global, const GraphSharding& sharding) {
  write_text_file(path, strategy_json_with_parameters(strategies_of(global, sharding), parameter_places(global, sharding)));
}

}  // namespace sf
