// One layout change the redistribution planner may use (a step kind of
// parallel/redistribution_plan.h): which steps of the kind apply to a layout, and how a rank
// runs one as graph ops. Each kind lives in its own file, named for the change it makes
// (partial_to_replicated.cc, split_to_split.cc, ...), with a worked example at its top.
//
// candidates() only offers steps whose result every rank can hold (the split divides the dim)
// and whose groups list ranks ascending (so a collective's group-local rank is the block index
// it must produce); lower() may rely on both.
//
// Threading: the table is built once, immutable after.
#pragma once

#include <cstdint>
#include <vector>

#include <shardflow/ops/builder.h>
#include <shardflow/parallel/redistribution_plan.h>

namespace sf {

struct Conversion {
  StepKind kind;
  // Every step of this kind from `from` for a tensor of shape `shape` with elements of
  // `element_bytes`, with its `after`, axes, dims and bytes.
  std::vector<RedistributionStep> (*candidates)(const TensorLayout& from, const Shape& shape, int64_t element_bytes);
  // Appends `rank`'s part of `step` to the graph: `x` is its shard in step.before, the result
  // its shard in step.after (of a tensor of global shape `shape`).
  Value (*lower)(GraphBuilder& b, const RedistributionStep& step, const Shape& shape, int rank, Value x);
};

// Every conversion, in StepKind order.
const std::vector<Conversion>& conversions();
const Conversion& conversion(StepKind kind);

// The six entries of the table, one per file.
extern const Conversion kPartialToReplicated;  // AllReduce
extern const Conversion kPartialToSplit;       // ReduceScatter
extern const Conversion kSplitToReplicated;    // AllGather
extern const Conversion kSplitToSplit;         // AlltoAll
extern const Conversion kReplicatedToSplit;    // Slice
extern const Conversion kReplicatedToPartial;  // Partial

}  // namespace sf
