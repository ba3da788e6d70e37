#include "tools/sfrun/elastic_lines.h"

#include <charconv>

namespace sf::sfrun {

namespace {

// Reads a whole number (no sign) at the front of `s` and takes it off; nullopt, `s` unchanged, where there is none
// or it does not fit an int.
std::optional<int> take_number(std::string_view& s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data() || s.front() == '-') return std::nullopt;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return v;
}

// `a,b,c` (a space after a comma allowed) at the front of `s`, up to whatever follows the list (` (4 -> 3 ranks`,
// `;`, the end); empty when `s` does not start with a number or a comma leads nowhere.
std::vector<int> take_rank_list(std::string_view s) {
  std::vector<int> ranks;
  for (;;) {
    const auto r = take_number(s);
    if (!r) return {};
    ranks.push_back(*r);
    if (s.empty() || s.front() != ',') return ranks;
    s.remove_prefix(1);
    if (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  }
}

}  // namespace

std::optional<ElasticLine> parse_elastic_line(std::string_view line) {
  const auto at = line.find(kElasticPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + kElasticPrefix.size());
  const auto generation = take_number(rest);
  if (!generation || rest.empty() || rest.front() != ':') return std::nullopt;
  ElasticLine out;
  out.generation = *generation;
  out.text = std::string(line.substr(at));
  // The last `; members `: the reason in `lost rank 2 (...)` is free text and comes before it.
  static constexpr std::string_view kMembers = "; members ";
  const auto m = rest.rfind(kMembers);
  if (m != std::string_view::npos) out.members = take_rank_list(rest.substr(m + kMembers.size()));
  return out;
}

}  // namespace sf::sfrun
