#include "tools/sfckpt/strategy_placement.h"

#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/parallel/strategy.h>
#include <shardflow/parallel/strategy_file.h>
#include "tools/sfckpt/usage_error.h"

namespace sf::sfckpt {
namespace {

using json = nlohmann::json;

// The prefix of the rank-local rows train/rank_local_tensors.h saves (its detail::kRankLocal).
constexpr std::string_view kRankLocalPrefix = "rank_local.";

// One entry of the "parameters" section: the op that reads the tensor and which input it is.
struct Place {
  std::string op;
  size_t input = 0;
};

// The "parameters" section of the file (empty if it has none), every entry checked.
std::map<std::string, Place> parameter_places(const std::string& path) {
  json root;
  try {
    root = json::parse(read_text_file(path, kMaxStrategyFileBytes));
  } catch (const json::exception& e) {
    // load_strategy_file has parsed the same text already; this is only a second guard.
    throw UsageError(fmt::format("strategy file '{}': not JSON: {}", path, e.what()));
  }
  std::map<std::string, Place> out;
  if (!root.contains("parameters")) return out;
  const json& section = root["parameters"];
  if (!section.is_object())
    throw UsageError(fmt::format("strategy file '{}': \"parameters\" must be an object {{tensor name: {{\"op\": name, "
                                 "\"input\": index}}}}",
                                 path));
  for (const auto& [name, entry] : section.items()) {
    const std::string where = fmt::format("strategy file '{}', parameter '{}'", path, name);
    if (!entry.is_object()) throw UsageError(where + ": must be {\"op\": op name, \"input\": input index}");
    for (const auto& [key, value] : entry.items())
      if (key != "op" && key != "input") throw UsageError(fmt::format("{}: unknown key '{}' (op, input)", where, key));
    if (!entry.contains("op") || !entry["op"].is_string()) throw UsageError(where + ": \"op\" must name an op");
    if (!entry.contains("input") || !entry["input"].is_number_unsigned())
      throw UsageError(where + ": \"input\" must be an input index (0, 1, ...)");
    out[name] = {entry["op"].get<std::string>(), entry["input"].get<size_t>()};
  }
  return out;
}

// The layout in_strategy[input] of `op` gives a tensor of `shape` on `devices` devices.
TensorLayout layout_of(const TensorStrategy& s, const Shape& shape, int devices, const std::string& where) {
  if (s.dims() != static_cast<int>(shape.size()))
    throw UsageError(fmt::format("{}: {} has {} dims, the tensor {} has {}", where, s.str(), s.dims(),
                                 shape_str(shape), shape.size()));
  try {
    TensorLayout l = s.is_layout() ? s.layout().fit_to(devices, where) : strategy_to_layout(s.tuple(), devices, where);
    l.check(shape, where);
    return l;
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// The parameter a state tensor "<kind>.<parameter>" belongs to, as the optimizers name them.
const std::string* owner_of(const std::string& name, const std::map<std::string, TensorLayout>& placed) {
  const std::string* best = nullptr;
  for (const auto& [param, layout] : placed)
    if (name.size() > param.size() + 1 && name.compare(name.size() - param.size(), param.size(), param) == 0 &&
        name[name.size() - param.size() - 1] == '.' && (!best || param.size() > best->size()))
      best = &param;
  return best;
}

}  // namespace

StrategyPlacement place_by_strategy_file(const std::string& path, const ckpt::Manifest& m, int devices) {
  StrategyTable table;
  try {
    table = load_strategy_file(path);
  } catch (const Error& e) {
    throw UsageError(e.what());  // already names the file and the rule
  }
  const std::map<std::string, Place> places = parameter_places(path);

  StrategyPlacement out;
  std::map<std::string, std::string> why_whole;
  for (const auto& [name, place] : places) {
    const ckpt::TensorEntry* t = m.find(name);
    if (!t)
      throw UsageError(fmt::format("strategy file '{}', parameter '{}': the checkpoint has no tensor of that name",
                                   path, name));
    const std::string where = fmt::format("strategy file '{}', parameter '{}'", path, name);
    auto op = table.find(place.op);
    if (op == table.end()) {
      why_whole[name] = fmt::format("its op '{}' has no strategy in the file", place.op);
      continue;
    }
    if (place.input >= op->second.in.size())
      throw UsageError(fmt::format("{}: input {} of op '{}', whose in_strategy has {} entries", where, place.input,
                                   place.op, op->second.in.size()));
    out.layouts.emplace(name, layout_of(op->second.in[place.input], t->shape, devices,
                                        fmt::format("{}, in_strategy[{}] of '{}'", where, place.input, place.op)));
  }
  // Optimizer state follows its parameter; everything else not placed stays whole.
  std::map<std::string, TensorLayout> state;
  for (const ckpt::TensorEntry& t : m.tensors) {
    if (out.layouts.count(t.name) || why_whole.count(t.name) || places.count(t.name)) continue;
    // Rows of rank-local copies (one per saving rank) are no parameter's state.
    if (t.name.starts_with(kRankLocalPrefix)) continue;
    const std::string* owner = owner_of(t.name, out.layouts);
    if (owner && m.find(*owner)->shape == t.shape) state.emplace(t.name, out.layouts.at(*owner));
  }
  out.layouts.insert(state.begin(), state.end());
  for (const ckpt::TensorEntry& t : m.tensors) {
    if (out.layouts.count(t.name)) continue;
    auto why = why_whole.find(t.name);
    out.whole.push_back(fmt::format("{} ({})", t.name,
                                    why != why_whole.end() ? why->second : "not named in the file's \"parameters\""));
  }
  return out;
}

}  // namespace sf::sfckpt
