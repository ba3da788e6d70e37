/// @file
/// RankContext: everything one rank knows about its job — its transport endpoint, the world
/// group and the groups it created by name — and the MindSpore-style functions that read the
/// calling rank's context: get_rank(), get_group_size(), get_local_rank(), create_group(),
/// destroy_group(). sf::comm::init() (comm/bootstrap/init.h) builds the contexts; code of a
/// rank finds its own through the calling thread.
///
/// Which rank is "the calling rank": with one rank per process (sfrun, mpirun, Slurm) it is the
/// process's rank on every thread. With --devices N (N virtual ranks in one process) each rank
/// runs on its own threads, and a thread belongs to the rank bound to it by run_ranks() or
/// RankBinding (threads a rank starts for itself bind it the same way). A call from a thread
/// bound to no rank of such a process is an error naming the fix.
///
/// Threading: a RankContext's member functions are thread-safe; the bindings are per thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <shardflow/comm/group.h>
#include <shardflow/comm/transport.h>

namespace sf::comm {

/// One rank's job: its endpoint, its world group and the groups it created by name.
class RankContext {
 public:
  /// `local_rank` is this rank's index among the ranks of its host.
  RankContext(std::shared_ptr<Transport> transport, int local_rank);

  /// This rank's world rank.
  int rank() const { return world_.rank(); }
  /// The world size.
  int size() const { return world_.size(); }
  /// This rank's index among the ranks of its host.
  int local_rank() const { return local_rank_; }
  /// The group of every rank of the world.
  const Group& world() const { return world_; }
  /// This rank's endpoint.
  const std::shared_ptr<Transport>& transport() const { return transport_; }

  /// Creates and keeps the group `name` (see comm/group.h create_group for what is refused);
  /// also refuses a name already in use on this rank.
  Group create_group(const std::string& name, std::vector<int> ranks);
  /// Forgets `name`; collectives already holding the group finish normally. NotFound if unknown,
  /// InvalidArgument for "world".
  void destroy_group(const std::string& name);
  /// The group `name` ("world" included); NotFound naming the known groups otherwise.
  Group group(const std::string& name) const;

 private:
  std::shared_ptr<Transport> transport_;
  Group world_;
  int local_rank_;
  mutable std::mutex mu_;
  std::map<std::string, Group> groups_;
};

/// The calling thread's rank (see above); throws InvalidArgument when there is none.
RankContext& current_rank();
/// The calling thread's rank, or null.
RankContext* current_rank_or_null();
/// The calling thread's rank, shared (null when none): a holder that keeps a weak_ptr to it
/// notices when the rank's job ends (release()).
std::shared_ptr<RankContext> current_rank_shared();
/// Whether the calling thread's rank is one of several ranks this process holds (--devices N:
/// bound by run_ranks() or RankBinding, in a world of more than one rank). False in a process
/// holding one rank (sfrun, mpirun, Slurm) and on a thread with no rank.
bool is_virtual_rank();

/// Binds a rank to the calling thread for the lifetime of the object (restoring the previous
/// binding after). Used by run_ranks() and by threads a rank starts on its own behalf.
class RankBinding {
 public:
  /// Binds `ctx` to the calling thread.
  explicit RankBinding(std::shared_ptr<RankContext> ctx);
  /// Restores the binding the thread had before.
  ~RankBinding();
  RankBinding(const RankBinding&) = delete;
  RankBinding& operator=(const RankBinding&) = delete;

 private:
  std::shared_ptr<RankContext> previous_;
};

/// The rank of a process holding one (set_process_rank), or null.
std::shared_ptr<RankContext> process_rank();
/// After a membership change (comm/membership.h): this process's one rank goes on in the world
/// of `transport`, whose rank and size it now has. The process rank and the calling thread's
/// binding become the new world's; the old world's transport is closed (its peers see a close
/// notice); its RankContext and groups stay with whoever holds them (callers build anew).
/// comm::job() still describes the job as launched. Refused (InvalidArgument) in a process
/// without exactly one rank.
void replace_world(std::shared_ptr<Transport> transport);
/// The rank every thread of this process sees when it has no binding of its own: set by init()
/// when the process holds exactly one rank, cleared (null) otherwise.
void set_process_rank(std::shared_ptr<RankContext> ctx);

// --- MindSpore's mindspore.communication functions, for the calling rank ---
/// Rank of the calling rank in `group` (its world rank for "world").
int get_rank(const std::string& group = kWorldGroupName);
/// Number of ranks in `group`.
int get_group_size(const std::string& group = kWorldGroupName);
/// Index of the calling rank among the ranks of its host (for --devices N: its rank).
int get_local_rank();
/// Creates the group `name` over world `ranks` on the calling rank (RankContext::create_group).
Group create_group(const std::string& name, std::vector<int> ranks);
/// Forgets the group `name` on the calling rank (RankContext::destroy_group).
void destroy_group(const std::string& name);
///@{
/// World rank of `group_rank` in `group`, and the reverse (InvalidArgument if not a member).
int get_world_rank_from_group_rank(const std::string& group, int group_rank);
int get_group_rank_from_world_rank(int world_rank, const std::string& group);
///@}

}  // namespace sf::comm
