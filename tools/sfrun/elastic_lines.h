/// @file
/// The membership lines the ranks of an elastic job print (docs/elastic.md). When ranks are lost, every surviving
/// rank prints, on its stdout or stderr, one line per change of the membership:
/// @verbatim
///   shardflow elastic: generation 1: lost rank 2 (why); detected at 17:20:01.123; members 0,1,3 (4 -> 3 ranks;
///   this rank 3 -> 2); rolled back to step 17; recovered in 0.412 s
/// @endverbatim
/// (one line), or `shardflow elastic: generation G: ... below the minimum ...` when too few are left to go on.
/// sfrun reads them to know which ranks are still in the job and to show each change once (elastic_membership.h).
/// The members are sfrun's rank numbers, the ranks as the job started.
///
/// Threading: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sf::sfrun {

/// What starts a membership line; a rank's logger may put something before it.
inline constexpr std::string_view kElasticPrefix = "shardflow elastic: generation ";

struct ElasticLine {
  int generation = 0;
  std::string text;          ///< the line from kElasticPrefix on
  std::vector<int> members;  ///< the ranks in the job from this generation on; empty where the line names none
};

/// The membership line in `line`, or nullopt when `line` has no kElasticPrefix followed by `G:`. A `members` list that
/// is not a comma-separated list of whole numbers is left out (members empty): such a line changes no membership.
std::optional<ElasticLine> parse_elastic_line(std::string_view line);

}  // namespace sf::sfrun
