/// @file
/// Tuple strategies: MindSpore's `shard(((2, 4),))` form, the number of blocks of each tensor
/// dim. Strategy (s0, ..., sk) is the layout with device matrix (s0, ..., sk), dim i on axis i.
/// If the strategy uses fewer devices than the job it is repeated calculation: the repeat count
/// becomes a new last axis of the device matrix (MindSpore's default), so the replicas of a
/// block sit on neighbouring ranks — (4,1) on 8 devices is device matrix (4,1,2), block i on
/// ranks 2i and 2i+1.
///
/// An op's device matrix built from all its inputs' strategies (MatMul ((a,b),(b,c)) has
/// (a,b,c), X on axes 0,1 and W on axes 1,2) is the op's sharding rule's business; it builds
/// those TensorLayouts directly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/parallel/tensor_layout.h>

namespace sf {

/// A tuple strategy: the number of blocks of each tensor dim.
using Strategy = std::vector<int64_t>;

/// "(4,1)".
std::string strategy_str(const Strategy& strategy);

/// The layout of `strategy` on `device_count` devices. Throws InvalidArgument naming `what` and
/// the strategy for an empty strategy, an entry below 1, or a product that neither equals nor
/// divides `device_count`. Check it against the tensor's shape with TensorLayout::check.
TensorLayout strategy_to_layout(const Strategy& strategy, int64_t device_count, std::string_view what = "strategy");

}  // namespace sf
