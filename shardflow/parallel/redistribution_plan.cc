#include <shardflow/parallel/redistribution_plan.h>

#include <fmt/format.h>

#include <algorithm>

namespace sf {

std::string_view step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kAllReduce:
      return "AllReduce";
    case StepKind::kReduceScatter:
      return "ReduceScatter";
    case StepKind::kAllGather:
      return "AllGather";
    case StepKind::kAlltoAll:
      return "AlltoAll";
    case StepKind::kSlice:
      return "Slice";
    case StepKind::kPartial:
      return "Partial";
  }
  return "?";
}

std::vector<int> RedistributionStep::group(int rank) const {
  return communicates() ? before.group(rank, axes) : std::vector<int>{};
}

std::vector<std::vector<int>> RedistributionStep::groups() const {
  return communicates() ? before.mesh().groups(axes) : std::vector<std::vector<int>>{};
}

std::string RedistributionStep::str() const {
  std::string out(step_kind_name(kind));
  if (kind == StepKind::kAlltoAll)
    out += fmt::format(" dim {} -> dim {}", dims.at(0), dims.at(1));
  else if (!dims.empty())
    out += fmt::format(" dim{} {}", dims.size() > 1 ? "s" : "", fmt::join(dims, ","));
  out += fmt::format(" over axes ({}) of {}", fmt::join(axes, ","), before.mesh().str());
  if (communicates()) {
    std::vector<std::string> gs;
    for (const auto& g : groups()) gs.push_back(fmt::format("[{}]", fmt::join(g, ",")));
    out += fmt::format(" groups {}", fmt::join(gs, " "));
  }
  return out + fmt::format(", {} bytes", bytes);
}

double RedistributionPlan::bytes() const {
  double total = 0;
  for (const auto& s : steps) total += s.bytes;
  return total;
}

std::vector<std::vector<int>> RedistributionPlan::groups_of(int rank) const {
  std::vector<std::vector<int>> out;
  for (const auto& s : steps) {
    std::vector<int> g = s.group(rank);
    if (!g.empty() && std::find(out.begin(), out.end(), g) == out.end()) out.push_back(std::move(g));
  }
  return out;
}

std::string RedistributionPlan::str() const {
  std::string out = fmt::format("{} {}: {} -> {}", dtype_name(dtype), shape_str(shape), from.str(), to.str());
  if (steps.empty()) out += " (no steps)";
  for (const auto& s : steps) out += "\n  " + s.str();
  return out;
}

}  // namespace sf
