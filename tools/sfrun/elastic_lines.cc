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

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// `SCHEME://REST`, as a zmq endpoint is written.
bool looks_like_endpoint(std::string_view a) {
  const auto sep = a.find("://");
  if (sep == 0 || sep == std::string_view::npos || sep + 3 == a.size()) return false;
  for (char c : a.substr(0, sep)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool is_elastic_ready_line(std::string_view line) {
  static constexpr std::string_view kReady = "shardflow elastic: rank ";
  const auto at = line.find(kReady);
  if (at == std::string_view::npos) return false;
  std::string_view rest = line.substr(at + kReady.size());
  static constexpr std::string_view kOf = " of ";
  if (!take_number(rest) || rest.substr(0, kOf.size()) != kOf) return false;
  rest.remove_prefix(kOf.size());
  static constexpr std::string_view kTrains = " trains elastic (";
  return take_number(rest) && rest.substr(0, kTrains.size()) == kTrains;
}

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

std::optional<JoinLine> parse_join_line(std::string_view line) {
  const auto at = line.find(kJoinPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(at + kJoinPrefix.size());
  const auto generation = take_number(rest);
  static constexpr std::string_view kAt = " at ";
  if (!generation || rest.substr(0, kAt.size()) != kAt) return std::nullopt;
  rest.remove_prefix(kAt.size());
  size_t end = 0;
  while (end < rest.size() && !is_blank(rest[end])) ++end;
  const std::string_view address = rest.substr(0, end);
  for (char c : rest.substr(end))
    if (!is_blank(c)) return std::nullopt;
  if (!looks_like_endpoint(address)) return std::nullopt;
  return JoinLine{*generation, std::string(address)};
}

bool door_is_gone(const JoinLine& given, const JoinLine& newest) {
  return newest.generation > given.generation && newest.address != given.address;
}

}  // namespace sf::sfrun
