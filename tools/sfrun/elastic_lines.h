/// @file
/// The membership lines the ranks of an elastic job print (docs/elastic.md). When ranks are lost, every surviving
/// rank prints, on its stdout or stderr, one line per change of the membership:
/// @verbatim
///   shardflow elastic: generation 1: lost rank 2 (why); detected at 17:20:01.123; members 0,1,3 (4 -> 3 ranks;
///   this rank 3 -> 2); rolled back to step 17; recovered in 0.412 s
/// @endverbatim
/// (one line), or `shardflow elastic: generation G: ... below the minimum ...` when too few are left to go on.
/// sfrun reads them to know which ranks are still in the job and to show each change once (elastic_membership.h).
/// The members are sfrun's rank numbers, the ranks as the job started; a rank that left may be listed again once a
/// replacement took its place (`members 0,1,3,2`: the list need not be ascending).
///
/// A world that can take a rank says so with a *join line*, printed by its rank 0 once it is open for joins:
/// @verbatim
///   shardflow elastic: join generation 1 at tcp://10.1.2.3:41234
/// @endverbatim
/// sfrun gives a replacement rank that address (`sfrun --max-restarts`, SF_ELASTIC_JOIN); it does not show the line.
/// A replacement still waiting at a door that a newer world no longer has is moved to that world's (door_is_gone).
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

/// What a rank prints once it trains through train_elastic: `shardflow elastic: rank 2 of 4 trains elastic (2:4)`.
/// Until some rank has said it, sfrun treats a failed rank as in a job that is not elastic: the program may not train
/// through train_elastic at all, and then its ranks cannot go on without the lost one.
bool is_elastic_ready_line(std::string_view line);

/// The membership line in `line`, or nullopt when `line` has no kElasticPrefix followed by `G:`. A `members` list that
/// is not a comma-separated list of whole numbers is left out (members empty): such a line changes no membership.
std::optional<ElasticLine> parse_elastic_line(std::string_view line);

/// What starts a join line; a rank's logger may put something before it. It is no membership line: the text differs
/// from kElasticPrefix after `shardflow elastic: `.
inline constexpr std::string_view kJoinPrefix = "shardflow elastic: join generation ";

struct JoinLine {
  int generation = 0;   ///< of the world that takes the rank
  std::string address;  ///< the zmq endpoint a joining rank connects to: `tcp://10.1.2.3:41234`, `ipc:///tmp/x/y`
};

/// The join line in `line`: kJoinPrefix, a whole number G, ` at `, then an address of the form `SCHEME://REST` with
/// no blank in it (SCHEME letters, digits, `+`, `-`, `.`; REST not empty). Blanks (spaces, tabs, a carriage return)
/// after the address are dropped; anything else after it makes the line no join line (nullopt), as does a missing or
/// malformed generation or address: sfrun starts a rank towards an address only when the line is exactly the form.
std::optional<JoinLine> parse_join_line(std::string_view line);

/// Whether a replacement that waits at `given`, the door it was started with, is to be started again at `newest`:
/// a door of a newer world at another address. Rank 0 keeps its door, at one address, from world to world while it
/// stays rank 0; a newer world's door elsewhere means the rank that opened `given` is rank 0 no longer (in practice it
/// died, and its door with it), so nobody will admit the replacement there. A newer door at the same address is the
/// same door: the replacement's request is still held there.
bool door_is_gone(const JoinLine& given, const JoinLine& newest);

}  // namespace sf::sfrun
