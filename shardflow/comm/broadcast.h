/// @file
/// Broadcast: the root's tensor goes to every rank of the group — MindSpore's
/// ops.Broadcast(root_rank). Every rank passes a tensor of the same shape and dtype (the
/// non-roots' contents are ignored) and receives a fresh copy of the root's.
///
/// Algorithm: kBinomialTree — ranks numbered relative to the root; in round i every rank that
/// has the data sends it to the rank 2^i above, so ceil(log2 n) rounds. Segmented: an inner
/// rank forwards segment k while its parent sends segment k+1. One message buffer serves
/// all the children of a rank (reader references, comm/buffer_pool.h): no per-child copies.
///
/// Threading: as AllReduce (comm/all_reduce.h).
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

/// The options of a Broadcast.
struct BroadcastOptions {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  int root = 0;  ///< group rank
  /// kAuto lets choose_algorithm() pick (comm/algorithm.h); another value forces one.
  Algorithm algorithm = Algorithm::kAuto;
  /// How long the call may take before it fails with PeerLost (comm/options.h).
  std::chrono::milliseconds timeout = default_timeout();
};

/// Throws InvalidArgument (bad options, before any message) or PeerLost (a rank stalled).
Tensor broadcast(const Tensor& input, const BroadcastOptions& opts);
/// As broadcast(), on the group's worker; the Work's result is the output.
Work broadcast_async(const Tensor& input, const BroadcastOptions& opts);

}  // namespace sf::comm
