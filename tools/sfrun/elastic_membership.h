/// @file
/// Which ranks are still in an elastic job, as sfrun follows it from the ranks' membership lines (elastic_lines.h).
/// The job starts with every rank a member; a line of a newer generation that names its members replaces the
/// membership. A rank outside it is *removed*: the survivors go on without it, and its end fails nothing. A rank that
/// a later line lists again (a replacement took its place, `sfrun --max-restarts`) is a member again; the list may
/// name the ranks in any order.
///
/// It also keeps the newest join line (elastic_lines.h): where a replacement rank may join the running job.
///
/// Each generation is shown once: every surviving rank prints the same change, and sfrun passes on the first line
/// it sees for a generation number, prefixed `sfrun: `.
///
/// Threading: one thread (the supervisor's).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tools/sfrun/elastic_lines.h"

namespace sf::sfrun {

class ElasticMembership {
 public:
  /// Ranks 0..size-1, all members (generation 0).
  explicit ElasticMembership(int size);

  /// Takes one line of a rank's output. Returns what sfrun prints for it — `sfrun: ` + the membership line + a
  /// newline — when it is the first line of its generation, else "". A list naming a rank outside 0..size-1 is
  /// shown but changes no membership; so is a line of an older generation than the current membership's. A join
  /// line is kept (the newest: of the highest generation, the last seen of it) and never shown.
  std::string on_line(std::string_view line);

  /// Whether `rank` is in the current membership.
  bool is_member(int rank) const;
  /// Whether some rank has said that it trains elastic (is_elastic_ready_line).
  bool announced() const { return announced_; }
  int generation() const { return generation_; }  ///< of the current membership; 0: the ranks the job started with
  std::vector<int> members() const;                ///< ascending

  /// The newest join line when its generation is at least `min_generation` and at least the current membership's
  /// (an older one is stale: that world has changed since); else nullopt.
  std::optional<JoinLine> join_from(int min_generation) const;

 private:
  int size_;
  int generation_ = 0;
  bool announced_ = false;
  std::vector<bool> member_;
  std::set<int> shown_;  // generations whose first line was passed on
  std::optional<JoinLine> join_;
};

}  // namespace sf::sfrun
