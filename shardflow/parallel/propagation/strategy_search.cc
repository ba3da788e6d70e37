#include <shardflow/parallel/propagation/strategy_search.h>

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace sf {

const StrategyDecision* StrategySearch::find(const std::string& op) const {
  for (const StrategyDecision& d : decisions)
    if (d.op == op) return &d;
  return nullptr;
}

std::vector<StrategyDecision::Compared> cheapest(const std::vector<std::string>& strategies,
                                                 const std::vector<double>& bytes, size_t keep) {
  std::vector<size_t> order(strategies.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] < bytes[b]; });
  std::vector<StrategyDecision::Compared> out;
  for (size_t i = 0; i < order.size() && i < keep; ++i) out.push_back({strategies[order[i]], bytes[order[i]]});
  return out;
}

namespace {
std::string why(const StrategyDecision& d) {
  switch (d.reason) {
    case DecisionReason::kGiven: return "given by shard()";
    case DecisionReason::kPropagated:
      return fmt::format("propagated {} from {}", d.forward ? "forward" : "backward", d.from);
    case DecisionReason::kImproved:
      return fmt::format("improved once its neighbours were fixed (first propagated from {})", d.from);
    case DecisionReason::kDataParallel: return "data parallel: no op connected to it has a strategy";
    case DecisionReason::kSearched: return "chosen by the cost model (communication + memory)";
  }
  return "";
}
}  // namespace

std::string StrategySearch::explain() const {
  std::string out = fmt::format("strategy search: {}\n", mode);
  for (const StrategyDecision& d : decisions) {
    out += fmt::format("{} ({}): {} — {}\n", d.op, d.op_type, d.strategy.str(), why(d));
    if (d.compared.empty()) continue;
    std::vector<std::string> parts;
    for (const auto& c : d.compared) parts.push_back(fmt::format("{} {:.0f} B", c.strategy, c.bytes));
    out += fmt::format("    {:.0f} B per rank; compared {} of {}: {}\n", d.bytes, d.compared.size(), d.candidates,
                       fmt::join(parts, ", "));
  }
  if (mode == "dynamic_programming")
    out += fmt::format("estimate: {:.0f} B moved per rank per step, {:.0f} B of parameters and activations per rank\n",
                       estimate_bytes, estimate_memory);
  return out;
}

}  // namespace sf
