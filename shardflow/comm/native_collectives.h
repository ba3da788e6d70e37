// NativeCollectives: the optional hook through which a backend runs a collective with its own
// implementation instead of the comm layer's send/recv algorithms — the mpi backend hands
// them to MPI's non-blocking collectives (comm/mpi/collectives.h). The algorithm table picks
// it as Algorithm::kNative (comm/algorithm.h); comm/detail/native.h is the collectives' side.
//
// A backend's collective must give every rank bitwise-identical results, the same bits on
// every run for the same inputs and group size, and it must never block the caller beyond a
// deadline: start() returns at once, and wait_until() gives up at the deadline or as soon as a
// member's endpoint has closed, so the caller can name the lost rank (comm/detail/call.h).
//
// Ordering: the operations of one group must reach start() in the same order on every rank
// (the backend matches them by order, as MPI does). The collectives call start() on the
// calling thread, in program order, also for the async forms.
//
// Threading: start() may be called from any thread; a NativeOperation is waited on by one
// thread. Tensors in a request stay referenced by the operation until it has finished (also
// one that was given up), so their storage outlives the backend's use of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/reduce_op.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

// One collective over a group, with the comm layer's meaning of each collective, on flat
// contiguous buffers: AllReduce (`input` and `output` of the same count), AllGather (`output`
// holds n times `input`, in group-rank order), ReduceScatter (`input` holds n blocks of
// `output`'s count; this rank gets block `rank`), Broadcast (`output` receives the root's
// `input`; the root's own output is left to the caller), AlltoAll (block j of `input` goes to
// group rank j, block i of `output` comes from group rank i).
struct NativeRequest {
  Collective collective = Collective::kAllReduce;
  ReduceOp op = ReduceOp::kSum;  // AllReduce, ReduceScatter
  int root = 0;                  // Broadcast: group rank
  Tensor input;
  Tensor output;
};

// The outcome of waiting for a NativeOperation.
struct NativeWait {
  enum Kind { kDone, kTimedOut, kPeerClosed } kind = kDone;
  int peer = -1;  // kPeerClosed: the world rank whose endpoint closed
};

class NativeOperation {
 public:
  virtual ~NativeOperation() = default;
  // Blocks until the operation has completed, `deadline` has passed, or a member's endpoint
  // has closed. After kTimedOut or kPeerClosed the operation is given up: its buffers may
  // still be used by the backend, which keeps them referenced.
  virtual NativeWait wait_until(std::chrono::steady_clock::time_point deadline) = 0;
};

class NativeCollectives {
 public:
  virtual ~NativeCollectives() = default;
  // True if the backend runs `c` on `count` elements (of the larger buffer) natively; the
  // answer must depend on nothing but its arguments, so that every rank agrees.
  virtual bool supports(Collective c, int64_t count) const = 0;
  // True if the algorithm table should pick the native form of a supported `c` on `count`
  // elements over the send/recv algorithms (an explicit request for native still gets it).
  // The same rule as supports(): nothing but its arguments decides.
  virtual bool prefers(Collective c, int64_t count) const {
    (void)c;
    (void)count;
    return true;
  }
  // Starts `req` over the group whose group rank i is world rank world_ranks[i] (`group_id`
  // as in comm/group.h, this rank a member) and returns at once.
  virtual std::unique_ptr<NativeOperation> start(uint32_t group_id, const std::vector<int>& world_ranks,
                                                 NativeRequest req) = 0;
};

}  // namespace sf::comm
