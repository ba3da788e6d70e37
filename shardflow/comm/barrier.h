/// @file
/// Barrier: returns on a rank only after every rank of the group has entered it.
///
/// Algorithm: kDissemination — in round i (distance 2^i) each rank signals rank r + 2^i and
/// waits for rank r - 2^i (mod n); after ceil(log2 n) rounds every rank has heard, directly or
/// through others, from every other. Works for any n; messages carry no elements.
///
/// Threading: as AllReduce (comm/all_reduce.h).
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/work.h>

namespace sf::comm {

/// The options of a Barrier.
struct BarrierOptions {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  /// kAuto lets choose_algorithm() pick (comm/algorithm.h); another value forces one.
  Algorithm algorithm = Algorithm::kAuto;
  /// How long the call may take before it fails with PeerLost (comm/options.h).
  std::chrono::milliseconds timeout = default_timeout();
};

/// Throws InvalidArgument (bad options, before any message) or PeerLost (a rank stalled).
void barrier(const BarrierOptions& opts);
/// As barrier(), on the group's worker; the Work's result is an undefined tensor.
Work barrier_async(const BarrierOptions& opts);

}  // namespace sf::comm
