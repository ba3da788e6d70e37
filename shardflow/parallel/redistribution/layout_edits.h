// Helpers the conversions share: enumerating the axes a step may move, building the layout a
// step leads to, its shard size, and the communication group a rank's collective node names.
//
// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/ops/collective_builder.h>
#include <shardflow/parallel/redistribution_plan.h>

namespace sf {

// Every non-empty subset of `axes` (ascending lists, as `axes` is).
std::vector<std::vector<int>> nonempty_subsets(const std::vector<int>& axes);
// The tails of `axes` (length >= 1) that are ascending: the minor axes of a dim that one
// collective over an ascending group can take off.
std::vector<std::vector<int>> ascending_tails(const std::vector<int>& axes);

// `from` with `axes` removed from the end of dim `dim`'s list.
TensorLayout without_tail(const TensorLayout& from, int dim, const std::vector<int>& axes);
// `from` with `axes` appended (minor) to dim `dim`'s list and removed from its partial axes.
TensorLayout with_tail(const TensorLayout& from, int dim, const std::vector<int>& axes);
// `from` with `partial` as its partial axes.
TensorLayout with_partial(const TensorLayout& from, std::vector<int> partial);

// True if every dim of `shape` is divisible by its split in `layout`.
bool divides(const TensorLayout& layout, const Shape& shape);
// Bytes of one rank's shard.
int64_t shard_bytes(const TensorLayout& layout, const Shape& shape, int64_t element_bytes);

// A step of `kind` from `from` to `after` with cost `bytes`.
RedistributionStep make_step(StepKind kind, const TensorLayout& from, TensorLayout after, std::vector<int> axes,
                             std::vector<int> dims, double bytes);

// `x` cut into `n` equal pieces along `dim` (StridedSlice each), in order.
std::vector<Value> split_into(GraphBuilder& b, Value x, int dim, int64_t n);

// The graph's name of a group of world ranks: "0-1-2-3" (the rank list, as MindSpore's IR
// dumps show it). Whoever runs the graph creates a comm group by that name on those ranks.
std::string group_name(const std::vector<int>& ranks);
// The group `rank` joins in `step`, as CollectiveBuilder takes it.
GroupRef step_group(const RedistributionStep& step, int rank);

}  // namespace sf
