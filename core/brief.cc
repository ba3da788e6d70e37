#include "core/brief.h"

#include <fmt/format.h>

#include <algorithm>

namespace sf {

std::string brief_ints(const std::vector<int64_t>& values, size_t keep) {
  std::string out = "(";
  const size_t shown = std::min(values.size(), keep);
  for (size_t i = 0; i < shown; ++i) out += fmt::format("{}{}", i ? "," : "", values[i]);
  if (shown < values.size()) out += fmt::format(", ... {} more", values.size() - shown);
  return out + ")";
}

std::string brief_text(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  return fmt::format("{}... ({} more characters)", text.substr(0, max), text.size() - max);
}

}  // namespace sf
