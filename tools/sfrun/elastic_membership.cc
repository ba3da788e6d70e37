#include "tools/sfrun/elastic_membership.h"

#include <algorithm>

#include "tools/sfrun/elastic_lines.h"

namespace sf::sfrun {

ElasticMembership::ElasticMembership(int size) : size_(size), member_(static_cast<size_t>(size), true) {}

std::string ElasticMembership::on_line(std::string_view line) {
  if (is_elastic_ready_line(line)) {
    announced_ = true;
    return {};
  }
  if (auto join = parse_join_line(line)) {
    if (!join_ || join->generation >= join_->generation) join_ = std::move(*join);
    return {};
  }
  const auto parsed = parse_elastic_line(line);
  if (!parsed) return {};
  const auto& m = parsed->members;
  const bool valid = !m.empty() && std::all_of(m.begin(), m.end(), [&](int r) { return r >= 0 && r < size_; });
  // Ranks print a change as they reach it, so a slow rank's line of an older generation may come after a newer one.
  // The list replaces the membership whole: a rank it names again (a replacement that joined) is a member again.
  if (valid && parsed->generation > generation_) {
    generation_ = parsed->generation;
    std::fill(member_.begin(), member_.end(), false);
    for (int r : m) member_[static_cast<size_t>(r)] = true;
  }
  if (!shown_.insert(parsed->generation).second) return {};
  return "sfrun: " + parsed->text + "\n";
}

bool ElasticMembership::is_member(int rank) const {
  return rank >= 0 && rank < size_ && member_[static_cast<size_t>(rank)];
}

std::optional<JoinLine> ElasticMembership::join_from(int min_generation) const {
  if (!join_ || join_->generation < min_generation || join_->generation < generation_) return std::nullopt;
  return join_;
}

std::vector<int> ElasticMembership::members() const {
  std::vector<int> out;
  for (int r = 0; r < size_; ++r)
    if (member_[static_cast<size_t>(r)]) out.push_back(r);
  return out;
}

}  // namespace sf::sfrun
