// Algorithm: which step-by-step schedule a collective runs, and the one table that picks it.
//
// Every rank of a group must run the same algorithm for a call, or their messages would not
// match; and the algorithm fixes the reduction order, so it also fixes the f32 result. Hence
// the choice depends only on values all ranks share — the collective, the element count and
// the group size — and lives in choose_algorithm() alone. A caller may force one with the
// options' `algorithm` field; it is checked for validity with the collective before any
// message moves.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace sf::comm {

enum class Algorithm : uint8_t {
  kAuto,               // the table below picks
  kRing,               // AllReduce (reduce-scatter + all-gather), AllGather, ReduceScatter
  kRecursiveDoubling,  // AllReduce of small tensors: log2(n) exchange rounds (+2 for non-powers of two)
  kBinomialTree,       // Broadcast
  kPairwise,           // AlltoAll
  kDissemination,      // Barrier
};

enum class Collective : uint8_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll, kBarrier };

std::string_view algorithm_name(Algorithm a);
std::string_view collective_name(Collective c);

// AllReduce payloads up to this many bytes use recursive doubling (latency-bound); larger
// ones the ring (bandwidth-optimal).
constexpr int64_t kSmallAllReduceBytes = 64 << 10;
// Ring and tree algorithms move large tensors in segments of this many bytes, so message
// buffers stay small, pooled and in cache, and neighbours pipeline segment by segment.
constexpr int64_t kSegmentBytes = 128 << 10;

// The table: the algorithm every rank runs for (collective, payload bytes, group size).
Algorithm choose_algorithm(Collective c, int64_t nbytes, int group_size);

// Resolves `requested` (kAuto -> the table) and throws InvalidArgument naming the collective
// if the algorithm does not implement it.
Algorithm resolve_algorithm(Collective c, Algorithm requested, int64_t nbytes, int group_size);

}  // namespace sf::comm
