/// @file
/// ReduceScatter: every rank contributes a tensor of the same shape whose dim 0 is divisible
/// by the group size n; rank i receives block i (along dim 0) of the element-wise reduction —
/// MindSpore's ops.ReduceScatter: input (n * d, ...) gives (d, ...).
///
/// Algorithm: kRing — the reduce-scatter half of ring AllReduce; block j's reduction starts on
/// rank j+1 and ends on rank j, in the same order on every run.
///
/// Threading: as AllReduce (comm/all_reduce.h).
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/reduce_op.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

/// The options of a ReduceScatter.
struct ReduceScatterOptions {
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
Tensor reduce_scatter(const Tensor& input, const ReduceScatterOptions& opts);
/// As reduce_scatter(), on the group's worker; the Work's result is the output.
Work reduce_scatter_async(const Tensor& input, const ReduceScatterOptions& opts);

}  // namespace sf::comm
