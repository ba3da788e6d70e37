/// @file
/// AllReduce: every rank of the group contributes a tensor of the same shape and dtype and
/// receives the element-wise reduction (sum, prod, max or min) of all of them — MindSpore's
/// ops.AllReduce. The result is bitwise identical on every rank.
///
/// Algorithms (comm/algorithm.h picks by size): kRing — ring reduce-scatter then ring
/// all-gather, segmented and pipelined, 2(n-1)/n of the data per rank; kRecursiveDoubling —
/// for small tensors, log2(n) rounds of pairwise exchange of the whole tensor (non-powers of
/// two fold the extra ranks in first and out last).
///
/// Threading: call from one thread per rank; ranks call a group's collectives in the same
/// order. The input is only read; the output is a fresh tensor the caller owns outright.
/// all_reduce_async() runs on the group's worker: do not modify `input` until its Work is done.
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/reduce_op.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

/// The options of an AllReduce.
struct AllReduceOptions {
  /// The group it runs on; the calling rank's world group by default.
  Group group = default_group();
  /// How the ranks' elements combine.
  ReduceOp op = ReduceOp::kSum;
  /// kAuto lets choose_algorithm() pick (comm/algorithm.h); another value forces one.
  Algorithm algorithm = Algorithm::kAuto;
  /// How long the call may take before it fails with PeerLost (comm/options.h).
  std::chrono::milliseconds timeout = default_timeout();
};

/// Throws InvalidArgument (bad options, before any message) or PeerLost (a rank stalled).
Tensor all_reduce(const Tensor& input, const AllReduceOptions& opts);
/// As all_reduce(), on the group's worker; the Work's result is the output.
Work all_reduce_async(const Tensor& input, const AllReduceOptions& opts);

}  // namespace sf::comm
