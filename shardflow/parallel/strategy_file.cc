#include <shardflow/parallel/strategy_file.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/parallel/device_matrix.h>
#include <shardflow/parallel/layout.h>

namespace sf {

namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;  // written keys keep their order: device_matrix first
constexpr int kVersion = 1;

// Brief JSON for messages: a few levels and entries deep, never the whole value (a value can be
// megabytes, or nested too deep for a recursive dump to survive).
std::string brief(const json& j, int depth = 0) {
  constexpr size_t kEntries = 6;
  constexpr int kDepth = 3;
  if (!j.is_structured()) return brief_text(j.dump(), 60);
  if (depth >= kDepth || j.empty()) return j.is_array() ? (j.empty() ? "[]" : "[...]") : (j.empty() ? "{}" : "{...}");
  std::string out = j.is_array() ? "[" : "{";
  size_t i = 0;
  for (auto it = j.begin(); it != j.end() && i < kEntries; ++it, ++i) {
    if (i) out += ",";
    if (j.is_object()) out += json(it.key()).dump() + ":";
    out += brief(*it, depth + 1);
  }
  if (j.size() > kEntries) out += fmt::format(",... {} more", j.size() - kEntries);
  return out + (j.is_array() ? "]" : "}");
}

// Where an entry sits, for messages: "strategy file 'f.json', op 'fc1/MatMul', in_strategy[1]".
struct Where {
  const std::string& path;
  std::string op;
  std::string entry;
  std::string str() const {
    std::string s = fmt::format("strategy file '{}'", path);
    if (!op.empty()) s += fmt::format(", op '{}'", op);
    if (!entry.empty()) s += ", " + entry;
    return s;
  }
};

// ---- loading ----

std::vector<int64_t> positive_ints(const json& j, const Where& at, const char* what) {
  SF_ENFORCE(j.is_array() && !j.empty(), InvalidArgument, "{}: {} must be a non-empty list of positive integers, got {}",
             at.str(), what, brief(j));
  SF_ENFORCE(j.size() <= kMaxDeviceAxes, InvalidArgument, "{}: {} has {} entries, more than {}", at.str(), what,
             j.size(), kMaxDeviceAxes);
  std::vector<int64_t> out;
  for (const json& v : j) {
    SF_ENFORCE(v.is_number_integer() && v.get<int64_t>() >= 1, InvalidArgument,
               "{}: {} must be a non-empty list of positive integers, got {}", at.str(), what, brief(j));
    out.push_back(v.get<int64_t>());
  }
  return out;
}

DimAxes dim_axes(const json& j, const Where& at, size_t dim) {
  if (j.is_string()) return DimAxes(j.get<std::string>());
  SF_ENFORCE(j.is_array() && !j.empty(), InvalidArgument,
             "{}: tensor_map dim {} must be \"None\", an axis name or a list of axis names, got {}", at.str(), dim,
             brief(j));
  std::vector<std::string> names;
  for (const json& n : j) {
    SF_ENFORCE(n.is_string(), InvalidArgument, "{}: tensor_map dim {} must list axis names, got {}", at.str(), dim,
               brief(j));
    names.push_back(n.get<std::string>());
  }
  return DimAxes(std::move(names));
}

TensorStrategy tensor_strategy(const json& j, const Where& at) {
  if (j.is_array()) return TensorStrategy(Strategy(positive_ints(j, at, "a tuple strategy")));
  SF_ENFORCE(j.is_object(), InvalidArgument,
             "{}: an entry is a tuple ([2, 4]) or a layout ({{\"device_matrix\", \"alias_name\", \"tensor_map\"}}), got {}",
             at.str(), brief(j));
  for (const auto& [key, v] : j.items())
    SF_ENFORCE(key == "device_matrix" || key == "alias_name" || key == "tensor_map", InvalidArgument,
               "{}: unknown key '{}' in a layout (device_matrix, alias_name, tensor_map)", at.str(), key);
  for (const char* key : {"device_matrix", "alias_name", "tensor_map"})
    SF_ENFORCE(j.contains(key), InvalidArgument, "{}: a layout needs '{}'", at.str(), key);
  const std::vector<int64_t> mesh = positive_ints(j["device_matrix"], at, "device_matrix");
  std::vector<std::string> names;
  SF_ENFORCE(j["alias_name"].is_array(), InvalidArgument, "{}: alias_name must be a list of names, got {}", at.str(),
             brief(j["alias_name"]));
  for (const json& n : j["alias_name"]) {
    SF_ENFORCE(n.is_string(), InvalidArgument, "{}: alias_name must be a list of names, got {}", at.str(),
               brief(j["alias_name"]));
    names.push_back(n.get<std::string>());
  }
  const json& map = j["tensor_map"];
  SF_ENFORCE(map.is_array() && !map.empty(), InvalidArgument, "{}: tensor_map must list one entry per tensor dim, got {}",
             at.str(), brief(map));
  std::vector<DimAxes> dims;
  for (size_t d = 0; d < map.size(); ++d) dims.push_back(dim_axes(map[d], at, d));
  try {
    return TensorStrategy(Layout(mesh, names).apply(dims));
  } catch (const InvalidArgument& e) {
    SF_THROW(InvalidArgument, "{}: {}", at.str(), e.what());
  }
}

std::vector<TensorStrategy> strategy_list(const json& j, Where at, const char* key) {
  at.entry = key;
  SF_ENFORCE(j.is_array() && !j.empty(), InvalidArgument, "{}: must be a non-empty list with one entry per tensor, got {}",
             at.str(), brief(j));
  std::vector<TensorStrategy> out;
  for (size_t i = 0; i < j.size(); ++i) {
    at.entry = fmt::format("{}[{}]", key, i);
    out.push_back(tensor_strategy(j[i], at));
    SF_ENFORCE(out.back().is_layout() == out.front().is_layout(), InvalidArgument,
               "{}: an op takes tuples for all its tensors or layouts for all of them, not both", at.str());
  }
  return out;
}

OpStrategy op_strategy(const json& j, const Where& at) {
  SF_ENFORCE(j.is_object(), InvalidArgument, "{}: must be an object with in_strategy (and out_strategy), got {}", at.str(),
             brief(j));
  for (const auto& [key, v] : j.items())
    SF_ENFORCE(key == "in_strategy" || key == "out_strategy", InvalidArgument,
               "{}: unknown key '{}' (in_strategy, out_strategy)", at.str(), key);
  SF_ENFORCE(j.contains("in_strategy"), InvalidArgument, "{}: in_strategy is missing", at.str());
  OpStrategy s;
  s.in = strategy_list(j["in_strategy"], at, "in_strategy");
  if (j.contains("out_strategy")) s.out = strategy_list(j["out_strategy"], at, "out_strategy");
  return s;
}

// ---- saving ----

ordered tensor_json(const TensorStrategy& s, const std::string& op) {
  if (!s.is_layout()) return s.tuple();
  const TensorLayout& l = s.layout();
  SF_ENFORCE(l.axis_names().size() == static_cast<size_t>(l.mesh().axes()) && l.partial().empty(), InvalidArgument,
             "strategy of '{}': layout {} has no axis names to save (only a Layout call's result can be saved)", op,
             l.str());
  ordered map = ordered::array();
  for (const std::vector<int>& axes : l.tensor_map()) {
    if (axes.empty()) {
      map.push_back("None");
    } else if (axes.size() == 1) {
      map.push_back(l.axis_names()[axes[0]]);
    } else {
      ordered names = ordered::array();
      for (int a : axes) names.push_back(l.axis_names()[a]);
      map.push_back(names);
    }
  }
  ordered out = ordered::object();
  out["device_matrix"] = l.mesh().dims();
  out["alias_name"] = l.axis_names();
  out["tensor_map"] = map;
  return out;
}

ordered list_json(const std::vector<TensorStrategy>& list, const std::string& op) {
  ordered out = ordered::array();
  for (const TensorStrategy& s : list) out.push_back(tensor_json(s, op));
  return out;
}

}  // namespace

StrategyTable load_strategy_file(const std::string& path) {
  const std::string text = read_text_file(path, kMaxStrategyFileBytes);
  const Where file{path, "", ""};
  json root;
  bool too_deep = false;
  try {
    // nlohmann's parser keeps its own stack, but dumping or walking a deeper value recurses.
    root = json::parse(text, [&](int depth, json::parse_event_t, json&) {
      if (depth > kMaxStrategyFileDepth) too_deep = true;
      return !too_deep;  // false discards the value: parsing goes on without building it
    });
  } catch (const json::exception& e) {
    // parse_error for bad syntax, out_of_range for a number no double holds (1e400).
    SF_THROW(InvalidArgument, "{}: not JSON: {}", file.str(), brief_text(e.what(), 200));
  }
  SF_ENFORCE(!too_deep, InvalidArgument, "{}: JSON nested more than {} levels deep", file.str(), kMaxStrategyFileDepth);
  SF_ENFORCE(root.is_object() && root.contains("strategies") && root["strategies"].is_object(), InvalidArgument,
             "{}: expected an object {{\"version\": {}, \"strategies\": {{op name: strategy, ...}}}}", file.str(),
             kVersion);
  if (root.contains("version"))
    SF_ENFORCE(root["version"] == kVersion, InvalidArgument, "{}: version {} is not supported (this reads version {})",
               file.str(), brief(root["version"]), kVersion);
  StrategyTable table;
  for (const auto& [op, entry] : root["strategies"].items()) table[op] = op_strategy(entry, Where{path, op, ""});
  return table;
}

std::string strategy_json(const StrategyTable& table) {
  // One op per line, so that a file reads (and diffs) as a table.
  std::string out = fmt::format("{{\n  \"version\": {},\n  \"strategies\": {{", kVersion);
  const char* sep = "\n";
  for (const auto& [op, s] : table) {
    ordered entry = ordered::object();
    entry["in_strategy"] = list_json(s.in, op);
    if (!s.out.empty()) entry["out_strategy"] = list_json(s.out, op);
    out += fmt::format("{}    {}: {}", sep, json(op).dump(), entry.dump());
    sep = ",\n";
  }
  return out + "\n  }\n}\n";
}

void save_strategy_file(const std::string& path, const StrategyTable& table) {
  write_text_file(path, strategy_json(table));
}

StrategyTable strategies_of(const Graph& global, const GraphSharding& sharding) {
  StrategyTable table;
  for (const auto& [id, ns] : sharding.by_node)
    if (ns.op) table[global.node(id).name] = ns.op->strategy;
  return table;
}

void check_strategy_file(const std::string& path, const StrategyTable& table, const Graph& global,
                         const std::vector<int>& outputs, int64_t devices) {
  try {
    shard_graph(global, outputs, table, devices);
  } catch (const Error& e) {
    SF_THROW(InvalidArgument, "strategy file '{}': {}", path, e.what());
  }
}

}  // namespace sf
