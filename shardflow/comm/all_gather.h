/// @file
/// AllGather: every rank contributes a tensor of the same shape (rank >= 1) and receives all
/// of them concatenated along dim 0 in group-rank order — MindSpore's ops.AllGather: input
/// (d0, ...) gives (n * d0, ...).
///
/// Algorithm: kRing — n-1 steps, each rank passes the block it received last to its right
/// neighbour; segmented and pipelined like AllReduce.
///
/// Threading: as AllReduce (comm/all_reduce.h): the output is fresh and the caller's; do not
/// modify `input` until an async Work is done.
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

/// The options of an AllGather.
struct AllGatherOptions {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  /// kAuto lets choose_algorithm() pick (comm/algorithm.h); another value forces one.
  Algorithm algorithm = Algorithm::kAuto;
  /// How long the call may take before it fails with PeerLost (comm/options.h).
  std::chrono::milliseconds timeout = default_timeout();
};

/// Throws InvalidArgument (bad options, before any message) or PeerLost (a rank stalled).
Tensor all_gather(const Tensor& input, const AllGatherOptions& opts);
/// As all_gather(), on the group's worker; the Work's result is the output.
Work all_gather_async(const Tensor& input, const AllGatherOptions& opts);

}  // namespace sf::comm
