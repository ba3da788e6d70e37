// plan_redistribution: the cheapest sequence of steps (parallel/redistribution_plan.h) that
// turns a tensor of one TensorLayout into another over the same devices.
//
// The two layouts are first put on one device matrix, the coarsest that refines both
// (parallel/mesh_refinement.h: (2,4) and (4,2) become (2,2,2)). On it the planner searches
// the layouts reachable by single steps (Dijkstra), costing each by the bytes a rank sends
// (the table in redistribution_plan.h), fewer steps breaking ties, and returns the cheapest
// path; consecutive local steps are merged. Local steps only go toward the target (a Slice
// cuts a dim by an axis the target cuts it by, a Partial step makes an axis partial that the
// target has partial). The search grows with the number of axes: on (2,2,2) it visits tens of
// layouts; a 4-d tensor permuted over six axes of 2 visits 10^5 (seconds). If the matrices have no common refinement ((2,3)
// and (3,2)), the plan goes through the replicated layout: the cheapest way there on the
// source's matrix, then local steps on the target's.
//
// Threading: a pure function.
#pragma once

#include <string_view>

#include <shardflow/core/dtype.h>
#include <shardflow/parallel/redistribution_plan.h>

namespace sf {

// Throws InvalidArgument naming `what` (the tensor) if either layout does not fit `shape`
// (TensorLayout::check) or their device counts differ.
RedistributionPlan plan_redistribution(const TensorLayout& from, const TensorLayout& to, const Shape& shape,
                                       DType dtype = DType::kF32, std::string_view what = "redistribution");

}  // namespace sf
