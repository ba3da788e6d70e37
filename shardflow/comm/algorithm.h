/// @file
/// Algorithm: which step-by-step schedule a collective runs, and the one table that picks it.
///
/// Every rank of a group must run the same algorithm for a call, or their messages would not
/// match; and the algorithm fixes the reduction order, so it also fixes the f32 result. Hence
/// the choice depends only on values all ranks share — the collective, the element count, the
/// group size and what the group's transport offers (TransportCaps: the same on every rank of
/// a world, comm/transport.h) — and lives in choose_algorithm() alone. A caller may force one
/// with the options' `algorithm` field; it is checked for validity with the collective and the
/// transport before any message moves.
///
/// Why the table picks what it picks (figures in docs/benchmarks.md):
///  * mpi: MPI's own non-blocking collectives (kNative) wherever the backend prefers them:
///    every size of AllReduce, AllGather, Broadcast and AlltoAll, ReduceScatter below 64 KiB.
///    From 64 KiB Open MPI's non-blocking ReduceScatter lost to the pipelined ring over the
///    fabric's messages (2.3x at 16 MiB), which now reach MPI without a thread hand-off.
///  * inproc, from kByReferenceMinBytes: kByReference — tensors travel by reference, so each
///    rank reads its peers' inputs in place (and, for AllReduce, writes its reduced block
///    straight into every output): one pass over the data instead of n-1 pooled copies. It
///    costs two rounds of messages to every peer, so smaller payloads, where the messages are
///    the cost, keep the send/recv algorithms below.
///  * anything else (zmq, wrapped transports): recursive doubling for small AllReduce (up to
///    small_all_reduce_bytes(group size)), the pipelined segmented ring above; binomial Broadcast, ring AllGather/ReduceScatter, pairwise AlltoAll.
///
/// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace sf::comm {

/// A collective's step-by-step schedule; each value lists the collectives it implements.
enum class Algorithm : uint8_t {
  kAuto,               ///< the table below picks
  kRing,               ///< AllReduce (reduce-scatter + all-gather), AllGather, ReduceScatter
  kRecursiveDoubling,  ///< AllReduce of small tensors: log2(n) exchange rounds (+2 for non-powers of two)
  kBinomialTree,       ///< Broadcast
  kPairwise,           ///< AlltoAll
  kDissemination,      ///< Barrier
  kNative,             ///< the transport's own collective (MPI's), comm/native_collectives.h
  kByReference,        ///< ranks in one address space read (and write) each other's tensors in place
};

/// The collectives an Algorithm is chosen for.
enum class Collective : uint8_t {
  kAllReduce,      ///< comm/all_reduce.h
  kAllGather,      ///< comm/all_gather.h
  kReduceScatter,  ///< comm/reduce_scatter.h
  kBroadcast,      ///< comm/broadcast.h
  kAllToAll,       ///< comm/all_to_all.h
  kBarrier,        ///< comm/barrier.h
};

/// "ring", "recursive_doubling", ...: the algorithm's name in messages.
std::string_view algorithm_name(Algorithm a);
/// The collective's name as MindSpore spells it, e.g.\ "AllReduce".
std::string_view collective_name(Collective c);

/// AllReduce payloads up to small_all_reduce_bytes(n) use recursive doubling (log2(n) rounds,
/// each moving the whole tensor: latency-bound); larger ones the ring (2(n-1) steps of 1/n of
/// it: bandwidth-optimal). The crossover falls as groups grow, since recursive doubling moves
/// log2(n) whole tensors per rank where the ring moves two; measured (docs/benchmarks.md,
/// "Algorithm crossovers") at 1 MiB for 2 ranks and between 256 KiB and 1 MiB for 4, on zmq
/// between processes and inproc alike: kRecursiveDoublingBudget / n, at least
/// kSmallAllReduceBytes.
constexpr int64_t kSmallAllReduceBytes = 64 << 10;
/// The bytes recursive doubling may move per rank in all its rounds (see kSmallAllReduceBytes).
constexpr int64_t kRecursiveDoublingBudget = 2 << 20;
/// The largest AllReduce payload that runs recursive doubling in a group of `group_size`.
constexpr int64_t small_all_reduce_bytes(int group_size) {
  const int64_t b = kRecursiveDoublingBudget / (group_size < 1 ? 1 : group_size);
  return b > kSmallAllReduceBytes ? b : kSmallAllReduceBytes;
}
/// On transports that pass tensors by reference, payloads (each rank's input) from this many
/// bytes use kByReference.
constexpr int64_t kByReferenceMinBytes = 1 << 20;
/// Ring and tree algorithms move large tensors in segments of this many bytes, so message
/// buffers stay small, pooled and in cache, and neighbours pipeline segment by segment.
constexpr int64_t kSegmentBytes = 128 << 10;

/// What a group's transport offers for one call; equal on every rank of the group.
struct TransportCaps {
  bool by_reference = false;  ///< Transport::passes_by_reference()
  bool native = false;        ///< its NativeCollectives support this collective at this count
  bool native_preferred = false;  ///< ... and prefer it there (NativeCollectives::prefers)
};

class Transport;
/// The caps of `transport` for collective `c` moving `count` elements (the larger buffer's).
TransportCaps transport_caps(Transport& transport, Collective c, int64_t count);

/// The table: the algorithm every rank runs for (collective, payload bytes, group size, caps).
Algorithm choose_algorithm(Collective c, int64_t nbytes, int group_size, TransportCaps caps = {});

/// Resolves `requested` (kAuto -> the table) and throws InvalidArgument naming the collective
/// if the algorithm does not implement it or the transport cannot run it.
Algorithm resolve_algorithm(Collective c, Algorithm requested, int64_t nbytes, int group_size,
                            TransportCaps caps = {});

}  // namespace sf::comm
