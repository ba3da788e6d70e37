// Broadcast: the root's tensor goes to every rank of the group — MindSpore's
// ops.Broadcast(root_rank). Every rank passes a tensor of the same shape and dtype (the
// non-roots' contents are ignored) and receives a fresh copy of the root's.
//
// Algorithm: kBinomialTree — ranks numbered relative to the root; in round i every rank that
// has the data sends it to the rank 2^i above, so ceil(log2 n) rounds. Segmented: an inner
// rank forwards segment k while its parent sends segment k+1. One message buffer serves
// all the children of a rank (reader references, comm/buffer_pool.h): no per-child copies.
//
// Threading: as AllReduce (comm/all_reduce.h).
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/work.h>
#include <shardflow/core/tensor.h>

namespace sf::comm {

struct BroadcastOptions {
  Group group = default_group();
  int root = 0;  // group rank
  Algorithm algorithm = Algorithm::kAuto;
  std::chrono::milliseconds timeout = default_timeout();
};

Tensor broadcast(const Tensor& input, const BroadcastOptions& opts);
Work broadcast_async(const Tensor& input, const BroadcastOptions& opts);

}  // namespace sf::comm
