/// @file
/// RankOwner: which rank of this process uses an object that must not be shared between ranks
/// (a network: its parameters are updated in place by the rank that trains it, so two rank
/// threads on one network train it non-deterministically and wrongly).
///
/// The first rank that claims it owns it until that rank's job ends (sf::comm::release()): the
/// owner may claim it again any number of times (sequential reuse, later run_ranks() calls of
/// the same job); another rank of the same process is refused. A claim from a thread with no
/// rank is not recorded and never refused, so a process with no ranks, or with one rank
/// (sfrun, mpirun), is never refused. Threads bound to no rank are not watched: a network used
/// at the same time by a rank thread and an unbound thread is not detected.
///
/// Threading: claim() is thread-safe. A copy is a new object, owned by no rank.
#pragma once

#include <memory>
#include <mutex>
#include <string>

namespace sf::comm {
class RankContext;
}

namespace sf::nn {

/// The rank of this process that owns an object; claim() refuses any other.
class RankOwner {
 public:
  RankOwner() = default;  ///< owned by no rank yet
  ///@{
  /// The owner is not copied: a copy is owned by no rank, an assigned object keeps its owner.
  RankOwner(const RankOwner&) {}
  RankOwner& operator=(const RankOwner&) { return *this; }
  ///@}

  /// Records the calling rank as the owner, or throws InvalidArgument
  /// "`<what>` is already used by rank `<r>` in this process; `<rule>`" when another rank of this
  /// process (of a job still running) owns it.
  void claim(const std::string& what, const std::string& rule);

 private:
  std::mutex mu_;
  std::weak_ptr<comm::RankContext> owner_;
  int owner_rank_ = -1;
};

}  // namespace sf::nn
