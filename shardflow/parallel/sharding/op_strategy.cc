#include <shardflow/parallel/sharding/op_strategy.h>

#include <fmt/format.h>

namespace sf {

namespace {
std::string list_str(const std::vector<TensorStrategy>& list) {
  std::vector<std::string> parts;
  for (const TensorStrategy& s : list) parts.push_back(s.str());
  return fmt::format("({}{})", fmt::join(parts, ", "), parts.size() == 1 ? "," : "");
}
}  // namespace

std::string OpStrategy::str() const {
  std::string s = "in_strategy " + list_str(in);
  if (!out.empty()) s += " out_strategy " + list_str(out);
  return s;
}

}  // namespace sf
