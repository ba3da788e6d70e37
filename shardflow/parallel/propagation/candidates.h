// The candidate strategies of one op, for the strategy searches (sharding propagation and the
// cost-model search): every tuple strategy that cuts the op's loops (its sharding rule's loop
// nest) into block counts whose product is the job's device count, each count dividing its
// loop's extent. A loop the kernel must see whole is never cut. If no such cut uses every
// device (extents too small), the candidates are those using the most devices that can be
// used (MindSpore's repeated calculation for the rest); an op with no cut at all (no loops)
// has its default strategy as its one candidate.
//
// The order is fixed and part of the contract: block counts ascending, first loop slowest, so
// for a 2-d ReLU on 8 devices (1,8), (2,4), (4,2), (8,1). The searches break ties by taking
// the earliest candidate, which keeps the cheapest cut that splits the trailing (feature) dims
// most — seed 002's relu gets (2,4) rather than (8,1) from its MatMul for this reason, as
// MindSpore's propagation gives it.
//
// Threading: pure functions.
#pragma once

#include <vector>

#include <shardflow/ops/graph.h>
#include <shardflow/parallel/sharding/op_sharding.h>

namespace sf {

struct Candidate {
  OpSharding sharding;  // its strategy (given = false), layouts and device matrix
};

// Every candidate of `node`, whose inputs have the (global) shapes `inputs`, on `devices`
// devices; each one passed shard_op. Throws NotFound for an op without a sharding rule.
std::vector<Candidate> op_candidates(const Node& node, const std::vector<Shape>& inputs, int64_t devices);

}  // namespace sf
