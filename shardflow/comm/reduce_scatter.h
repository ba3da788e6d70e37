// ReduceScatter: every rank contributes a tensor of the same shape whose dim 0 is divisible
// by the group size n; rank i receives block i (along dim 0) of the element-wise reduction —
// MindSpore's ops.ReduceScatter: input (n * d, ...) gives (d, ...).
//
// Algorithm: kRing — the reduce-scatter half of ring AllReduce; block j's reduction starts on
// rank j+1 and ends on rank j, in the same order on every run.
//
// Threading: as AllReduce (comm/all_reduce.h).
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/reduce_op.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

struct ReduceScatterOptions {
  Group group = default_group();
  ReduceOp op = ReduceOp::kSum;
  Algorithm algorithm = Algorithm::kAuto;
  std::chrono::milliseconds timeout = default_timeout();
};

Tensor reduce_scatter(const Tensor& input, const ReduceScatterOptions& opts);
Work reduce_scatter_async(const Tensor& input, const ReduceScatterOptions& opts);

}  // namespace sf::comm
