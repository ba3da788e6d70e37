// apply_redistribution: runs a redistribution plan as graph ops in one rank's local graph.
//
// Collectives become the collective graph ops (ops/collective_builder.h) on groups named by
// their rank lists ("0-1-2-3", group_name in parallel/redistribution/layout_edits.h), local
// steps StridedSlice, Concat and Mul (by a 1 or 0 Fill); all have gradient rules, so differentiating the local
// graph puts the reverse redistribution into the backward graph by itself (an AllGather's
// gradient is a ReduceScatter, an AlltoAll's the swapped AlltoAll, a slice's a zero-padding).
// Whoever runs the graph must give each rank a comm group under each name of
// redistribution_groups(plan, rank), over those world ranks in that order.
//
// Threading: as GraphBuilder (one thread while building).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <shardflow/ops/builder.h>
#include <shardflow/parallel/redistribution_plan.h>

namespace sf {

// Appends `rank`'s part of `plan` to the graph: `x` is its shard in plan.from (local shape
// checked), the result its shard in plan.to. With no steps, returns `x`.
Value apply_redistribution(GraphBuilder& b, const RedistributionPlan& plan, int rank, Value x);

// The groups `rank`'s part of `plan` runs collectives on: (name, world ranks ascending).
std::vector<std::pair<std::string, std::vector<int>>> redistribution_groups(const RedistributionPlan& plan, int rank);

}  // namespace sf
