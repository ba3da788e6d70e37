/// @file
/// Which ranks are still in an elastic job, as sfrun follows it from the ranks' membership lines (elastic_lines.h).
/// The job starts with every rank a member; a line of a newer generation that names its members replaces the
/// membership. A rank outside it is *removed*: the survivors go on without it, and its end fails nothing.
///
/// Each generation is shown once: every surviving rank prints the same change, and sfrun passes on the first line
/// it sees for a generation number, prefixed `sfrun: `.
///
/// Threading: one thread (the supervisor's).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sf::sfrun {

class ElasticMembership {
 public:
  /// Ranks 0..size-1, all members (generation 0).
  explicit ElasticMembership(int size);

  /// Takes one line of a rank's output. Returns what sfrun prints for it — `sfrun: ` + the membership line + a
  /// newline — when it is the first line of its generation, else "". A list naming a rank outside 0..size-1 is
  /// shown but changes no membership; so is a line of an older generation than the current membership's.
  std::string on_line(std::string_view line);

  bool is_member(int rank) const;
  int generation() const { return generation_; }  ///< of the current membership; 0: the ranks the job started with
  std::vector<int> members() const;                ///< ascending

 private:
  int size_;
  int generation_ = 0;
  std::vector<bool> member_;
  std::set<int> shown_;  // generations whose first line was passed on
};

}  // namespace sf::sfrun
