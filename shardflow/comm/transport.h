/// @file
/// Transport: the narrow point-to-point interface that every backend implements (inproc now;
/// zmq and mpi later, each in `comm/<backend>/` with the same file names). Collectives are
/// written only against this interface and never know which backend carries their bytes.
///
/// Messages are tensors addressed by (peer, tag) within one world of size() ranks. For every
/// ordered pair (sender, receiver) and tag, delivery is FIFO; different tags are independent
/// queues, so a receive for one tag never consumes a message of another.
///
/// Threading: one Transport object is one rank's endpoint. send() and recv() may be called
/// from several threads of that rank at once (the collectives of different groups, or an
/// async worker next to the caller thread); calls for the same (peer, tag) from two threads
/// at once have no defined order between them.
///
/// Buffer ownership (the contract every algorithm must respect):
///  * send() hands the tensor's elements to the message. The inproc backend passes the tensor
///    by reference: the receiver gets a Tensor sharing the sender's storage. The sender must
///    therefore never write to a tensor (or any view of its storage) after sending it. The
///    collectives send only buffers from BufferPool (comm/buffer_pool.h) or fresh tensors,
///    never a caller's input or output, so a caller may overwrite its tensors as soon as a
///    collective returns, whatever its peers are still doing.
///  * A pooled buffer carries reader references: each send() passes one reference to the
///    message, and whoever holds a received tensor releases it with BufferPool::release()
///    when done reading (a no-op for tensors that are not pooled). A backend that copies the
///    bytes out (zmq, mpi) releases the sender's reference itself once the bytes have left,
///    and returns received tensors in fresh pooled buffers, so algorithms read the same on
///    every backend.
///  * The one exception: a transport whose passes_by_reference() is true lets the table pick the
///    by-reference algorithms (comm/algorithm.h), which send the caller's own input and output
///    so that peers read and write them in place. Those algorithms return only after every peer
///    has said it is done with this rank's tensors, so the promise above still holds.
///
/// Optional capabilities (all off or at their defaults, so a backend that knows nothing of them keeps
/// working): passes_by_reference(), and native_collectives(), a backend's own collectives (the
/// mpi backend's are MPI's) that the table may pick as Algorithm::kNative. Both must answer the
/// same on every rank of a world: the algorithm table depends on them.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::comm {

/// Message tag; comm/group.h composes it from a group id, a sequence number and a slot.
using Tag = uint64_t;

class NativeCollectives;  // comm/native_collectives.h
class Transport;

/// The group id (bits 40..62, comm/group.h) that tags of the membership protocol carry
/// (comm/elastic/membership.h); create_group never gives it to a group.
inline constexpr uint32_t kMembershipGroupId = 0x7fffffu;
/// The tag of membership message `slot` of agreement round `round`.
inline Tag membership_tag(uint32_t round, uint8_t slot) {
  return (Tag{kMembershipGroupId} << 40) | (Tag{round} << 8) | slot;
}
/// True for the tags of membership_tag(): receives of these go on after Transport::interrupt.
inline bool is_membership_tag(Tag tag) { return (tag >> 40) == kMembershipGroupId; }

/// A bound endpoint of the world that follows a membership change (Transport::seed_next_world):
/// its address travels to the other members over the current world, then link() completes it.
class WorldSeed {
 public:
  virtual ~WorldSeed() = default;
  /// Where the other members reach this one.
  virtual const std::string& address() const = 0;
  /// Links with every member (addresses[r] is new rank r's) and returns this rank's endpoint of
  /// the new world; throws Error naming the members that did not link within `timeout`.
  virtual std::shared_ptr<Transport> link(const std::vector<std::string>& addresses,
                                          std::chrono::milliseconds timeout) = 0;
};

/// A replacement rank that asks to join a running elastic job (JoinDoor::poll).
struct JoinRequest {
  int label = 0;     ///< the rank number the launcher gave it (sfrun's), for the lines
  uint64_t id = 0;   ///< which of the door's connections asked
};

/// Where replacement ranks ask to join a running world (Transport::open_door): the world's rank
/// 0 keeps one open while the job has fewer ranks than it may (docs/elastic.md, "Rejoin").
/// Threading: one thread at a time (the watcher polls it while a step runs; the agreement admits
/// after the watcher stopped).
class JoinDoor {
 public:
  virtual ~JoinDoor() = default;
  /// Where a replacement connects ("tcp://10.0.0.2:41234", "ipc:///tmp/...").
  virtual const std::string& address() const = 0;
  /// The requests completed since the last call, without waiting (handshakes advance here).
  virtual std::vector<JoinRequest> poll() = 0;
  /// Tells the joiner of `request` its place in the next world — `size` ranks, it is `rank`,
  /// the world's `generation`, every member's address (addresses[rank] is not read) and every
  /// rank's label — and returns the address of its endpoint once it answers within `timeout`,
  /// or "" when it does not (it is then dropped).
  virtual std::string admit(const JoinRequest& request, int rank, int size, uint32_t generation,
                            const std::vector<std::string>& addresses, const std::vector<int>& labels,
                            std::chrono::milliseconds timeout) = 0;
  /// Tells the joiner of `request` that it will not be admitted into this world.
  virtual void refuse(const JoinRequest& request) = 0;
  /// The byte sizes of the first large messages a joiner will receive (an elastic run's training
  /// state), told to each joiner that proves the job secret from now on: it readies receive
  /// buffers of those sizes (BufferPool::prefault) before it asks to join, while the members
  /// train, instead of touching fresh memory while the bytes arrive. A hint: other sizes are
  /// received as ever.
  virtual void expect(const std::vector<uint64_t>& message_bytes) = 0;
};

/// What a rank that joined a running job learnt when it was admitted.
struct Admission {
  uint32_t generation = 0;  ///< the generation of the world it joined
  std::vector<int> labels;  ///< every rank's label (the launcher's rank numbers), by rank
  std::chrono::steady_clock::time_point linked_at;  ///< when its links to the members were up
};

/// One rank's endpoint: send and receive tensors by (peer, tag) within its world.
class Transport {
 public:
  virtual ~Transport() = default;
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  /// This endpoint's rank in [0, size()).
  virtual int rank() const = 0;
  /// Number of ranks in the world.
  virtual int size() const = 0;
  /// Backend name for messages: "inproc", "zmq", "mpi".
  virtual std::string_view name() const = 0;

  /// Queues `t` for `peer` under `tag` and returns without waiting for the receiver. Sending to
  /// a peer that has closed drops the message. Throws InvalidArgument for a peer out of range.
  virtual void send(int peer, Tag tag, const Tensor& t) = 0;

  /// Blocks until the oldest message from `peer` under `tag` arrives and returns it, or throws
  /// PeerLost naming `peer` and the tag when `timeout` passes first or the peer has closed
  /// (after the messages it sent before closing have been received). Never blocks longer.
  virtual Tensor recv(int peer, Tag tag, std::chrono::milliseconds timeout) = 0;

  /// Like recv, but when `wait` passes with no message it returns nothing instead of throwing:
  /// for a poll that mostly finds nothing (a loss watcher's wait for a join notice, every few
  /// milliseconds), where an exception per poll is waste. PeerLost when the peer has closed or
  /// been lost. The default is recv, whose timeout throws.
  virtual std::optional<Tensor> poll_recv(int peer, Tag tag, std::chrono::milliseconds wait) {
    return recv(peer, tag, wait);
  }

  /// Closes this endpoint: peers' receives from it fail at once with PeerLost, and messages
  /// sent to it are dropped. Models a rank that died. Idempotent.
  virtual void close() = 0;
  /// Ends the endpoint for good, at the job's end (release()): close() and then whatever must
  /// happen before the process exits even while objects still hold the transport (the mpi
  /// transport finalizes MPI here; a Python program's objects may outlive the job). Idempotent.
  virtual void finish() { close(); }

  /// True if send() hands the receiver the sender's storage itself, never a copy (inproc).
  virtual bool passes_by_reference() const { return false; }
  /// The backend's own collectives, or null (the default). Owned by the transport.
  virtual NativeCollectives* native_collectives() { return nullptr; }
  /// The message size, in bytes, that ring and tree algorithms cut large tensors into on this
  /// transport (comm/algorithm.h kSegmentBytes by default). Must be the same on every rank.
  virtual int64_t segment_bytes() const;

  ///@{
  /// Membership changes (comm/elastic/membership.h); a backend that cannot change its world
  /// (mpi, inproc) keeps the defaults: nothing lost, nothing to seed.
  /// The peers lost so far (killed, frozen, unreachable; not those that closed), by rank.
  virtual std::vector<int> lost_peers() const { return {}; }
  /// The peers that closed their endpoints, by rank.
  virtual std::vector<int> closed_peers() const { return {}; }
  /// How long a silent (frozen) peer takes to be counted lost; zero when peers are never lost.
  virtual std::chrono::milliseconds loss_bound() const { return std::chrono::milliseconds(0); }
  /// Makes every receive not under a membership tag, waiting or later, fail with PeerLost
  /// naming `lost`: a step in flight stops within milliseconds, whichever peer it waits for.
  virtual void interrupt(int lost, const std::string& why) { (void)lost, (void)why; }
  /// Undoes interrupt(): receives go on, and read what was sent before. For a world whose
  /// training ended while a peer that had finished too closed its endpoint: what follows (an
  /// evaluation's collectives) still runs on it.
  virtual void clear_interrupt() {}
  /// Binds this rank's endpoint of a new world of `size` ranks in which it is `rank`; the
  /// members of `generation` share a secret no earlier member can prove. Null: not supported.
  virtual std::unique_ptr<WorldSeed> seed_next_world(int rank, int size, uint32_t generation) {
    (void)rank, (void)size, (void)generation;
    return nullptr;
  }
  /// Opens the door through which replacement ranks ask to join this world. Null: not supported.
  virtual std::unique_ptr<JoinDoor> open_door() { return nullptr; }
  /// How this rank came into its world when it joined a running job; null for the others.
  virtual const Admission* admission() const { return nullptr; }
  ///@}
};

}  // namespace sf::comm
