// Barrier: returns on a rank only after every rank of the group has entered it.
//
// Algorithm: kDissemination — in round i (distance 2^i) each rank signals rank r + 2^i and
// waits for rank r - 2^i (mod n); after ceil(log2 n) rounds every rank has heard, directly or
// through others, from every other. Works for any n; messages carry no elements.
//
// Threading: as AllReduce (comm/all_reduce.h).
#pragma once

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/work.h>

namespace sf::comm {

struct BarrierOptions {
  Group group = default_group();
  Algorithm algorithm = Algorithm::kAuto;
  std::chrono::milliseconds timeout = default_timeout();
};

void barrier(const BarrierOptions& opts);
// The Work's result is an undefined tensor.
Work barrier_async(const BarrierOptions& opts);

}  // namespace sf::comm
