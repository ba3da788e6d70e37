/// @file
/// AlltoAll: MindSpore's ops.AlltoAll(split_count, split_dim, concat_dim). Each rank splits its
/// input along split_dim into split_count (= group size n) equal blocks and sends block j to
/// group rank j; it concatenates the blocks it receives, in source-rank order, along
/// concat_dim. Input (.., s, .., c, ..) gives (.., s/n, .., c*n, ..); split_dim and concat_dim
/// may be equal or negative (counted from the end).
///
/// Algorithm: kPairwise — in step s = 1..n-1 a rank sends to rank r+s and receives from rank
/// r-s (mod n), so every pair exchanges exactly once and no rank is everyone's target at once.
///
/// Threading: as AllReduce (comm/all_reduce.h).
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

/// The options of an AlltoAll.
struct AllToAllOptions {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  int split_count = 0;  ///< must equal the group size
  int split_dim = 0;   ///< the dim the input is split along
  int concat_dim = 0;  ///< the dim the received blocks are concatenated along
  /// kAuto lets choose_algorithm() pick (comm/algorithm.h); another value forces one.
  Algorithm algorithm = Algorithm::kAuto;
  /// How long the call may take before it fails with PeerLost (comm/options.h).
  std::chrono::milliseconds timeout = default_timeout();
};

/// Throws InvalidArgument (bad options, before any message) or PeerLost (a rank stalled).
Tensor all_to_all(const Tensor& input, const AllToAllOptions& opts);
/// As all_to_all(), on the group's worker; the Work's result is the output.
Work all_to_all_async(const Tensor& input, const AllToAllOptions& opts);

}  // namespace sf::comm
