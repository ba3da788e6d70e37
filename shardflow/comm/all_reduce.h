// AllReduce: every rank of the group contributes a tensor of the same shape and dtype and
// receives the element-wise reduction (sum, prod, max or min) of all of them — MindSpore's
// ops.AllReduce. The result is bitwise identical on every rank.
//
// Algorithms (comm/algorithm.h picks by size): kRing — ring reduce-scatter then ring
// all-gather, segmented and pipelined, 2(n-1)/n of the data per rank; kRecursiveDoubling —
// for small tensors, log2(n) rounds of pairwise exchange of the whole tensor (non-powers of
// two fold the extra ranks in first and out last).
//
// Threading: call from one thread per rank; ranks call a group's collectives in the same
// order. The input is only read; the output is a fresh tensor the caller owns outright.
// all_reduce_async() runs on the group's worker: do not modify `input` until its Work is done.
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/reduce_op.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

struct AllReduceOptions {
  Group group = default_group();
  ReduceOp op = ReduceOp::kSum;
  Algorithm algorithm = Algorithm::kAuto;
  std::chrono::milliseconds timeout = default_timeout();
};

// Throws InvalidArgument (bad options, before any message) or PeerLost (a rank stalled).
Tensor all_reduce(const Tensor& input, const AllReduceOptions& opts);
Work all_reduce_async(const Tensor& input, const AllReduceOptions& opts);

}  // namespace sf::comm
