/// @file
/// Group: a named subset of the world's ranks that collectives run over — MindSpore's
/// communication group (`create_group(name, rank_ids)`); the world group holds every rank.
///
/// A Group is one rank's handle: each member rank creates its own with the same name and rank
/// list. Group-local rank i is world rank ranks[i] (the order given). Every message of a
/// collective carries a tag built from the group id (a hash of the name and rank list, the
/// world group being id 0), the group's sequence number for that call and a slot, so
/// concurrent groups and consecutive collectives never mix messages. The sequence number is
/// taken when a collective is called (sync or async), so ranks must call a group's collectives
/// in the same program order.
///
/// After a collective fails with PeerLost the group is marked failed, and every later
/// collective on it fails at once with the same rank (as a broken NCCL communicator does).
///
/// Threading: a Group is a cheap shared handle (copies share state); all member functions are
/// thread-safe. Its state, including the async worker, lives until the last handle is gone;
/// destroying it waits for the async collectives already submitted.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <shardflow/comm/flight_recorder.h>
#include <shardflow/comm/transport.h>
#include <shardflow/comm/worker.h>

namespace sf::comm {

/// Name of the group that world_group() returns; create_group() refuses it.
inline constexpr const char* kWorldGroupName = "world";

/// Tag layout (comm/transport.h Tag): bit 63 marks point-to-point messages; bits 40..62 hold
/// the group id; a collective puts its sequence number in bits 8..39 and a slot in bits 0..7,
/// Send/Receive put their sr_tag in bits 0..31.
Tag collective_tag(uint32_t group_id, uint32_t seq, uint8_t slot);
/// The tag of a Send/Receive message with `sr_tag` in group `group_id` (see collective_tag).
Tag p2p_tag(uint32_t group_id, uint32_t sr_tag);

/// One rank's handle on a communication group.
class Group {
 public:
  Group() = default;  ///< no group: defined() is false and collectives refuse it

  /// False for a default-constructed Group.
  bool defined() const { return state_ != nullptr; }
  /// The name it was created with (kWorldGroupName for the world).
  const std::string& name() const;
  ///@{
  /// This rank's group-local rank, and the group size.
  int rank() const;
  int size() const;
  ///@}
  /// World rank of group rank `group_rank`.
  int world_rank(int group_rank) const;
  /// Group rank of `world_rank`, or -1 if it is not a member.
  int group_rank_of(int world_rank) const;
  /// The world ranks of the members, in group-rank order.
  const std::vector<int>& world_ranks() const;
  /// The group id in its messages' tags (0 for the world).
  uint32_t id() const;
  /// This rank's endpoint.
  Transport& transport() const;

  // --- for the collectives (comm/detail) ---
  /// The next sequence number of this group on this rank.
  uint32_t next_sequence() const;
  /// Records the first failure; later collectives rethrow it through throw_if_failed(), whose
  /// message begins with where() — built only then, not on every call.
  ///@{
  void mark_failed(int world_rank, const std::string& message) const;
  void throw_if_failed(const std::function<std::string()>& where) const;
  ///@}
  /// This endpoint's in-order async worker (started on first use).
  Worker& worker() const;
  /// The last collectives of this group on this rank (comm/flight_recorder.h).
  FlightRecorder& flight_recorder() const;
  /// A handle that does not keep the group alive, for tasks queued on the group's own worker.
  Group unowned() const;

 private:
  struct State;
  explicit Group(std::shared_ptr<State> s) : state_(std::move(s)) {}
  const State& state() const;
  friend Group world_group(std::shared_ptr<Transport> transport);
  friend Group create_group(std::shared_ptr<Transport> transport, const std::string& name, std::vector<int> ranks);

  std::shared_ptr<State> state_;
};

/// The calling rank's world group (comm/rank_context.h) if there is one, else an undefined
/// Group: the default of every collective's `group` option, so `all_reduce(x, {})` runs on the
/// world as in MindSpore.
Group default_group();

/// The group of every rank of `transport`'s world, group rank == world rank.
Group world_group(std::shared_ptr<Transport> transport);

/// The group `name` over world `ranks`, seen from `transport`'s rank, which must be a member.
/// Refuses, with InvalidArgument naming the group and the rank: an empty list, a rank outside
/// the world, a duplicate rank, this rank not in the list, an empty name or "world".
Group create_group(std::shared_ptr<Transport> transport, const std::string& name, std::vector<int> ranks);

}  // namespace sf::comm
