/// @file
/// A reshard plan: how a tensor held under one layout on M ranks becomes the same tensor held
/// under another layout on N ranks, M and N any counts (N = 1 included, no common factor
/// needed). For every target rank it lists the pieces of its block and, for each, the source
/// rank that supplies it and the contiguous byte runs to copy from that source rank's local
/// block into the target's. Pure geometry on shard boxes (parallel/shard_box.h); executing it
/// is copy_runs / reshard (parallel/reshard.h), with bytes from memory or from files.
///
/// Every element of a target block is read exactly once: the bytes a target rank reads equal its
/// shard bytes. A source block held by several ranks (replicated axes) is read from one of them,
/// chosen deterministically and spread over the holders: target rank t takes source block b
/// (b the block's row-major index in the source's grid of blocks) from holder (t + b) mod the
/// number of holders, ranks ascending. Runs are as long as the two blocks allow: a piece that is
/// a whole source block and a whole target block is one run.
///
/// Example: a 4x6 tensor split (2,1) on 2 ranks, loaded split (1,3) on 3 ranks: target rank 1
/// holds columns 2..3; source rank 0 supplies rows 0..1 of them (2 runs of 8 bytes, f32), source
/// rank 1 rows 2..3 (2 runs).
///
/// Threading: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/core/dtype.h>
#include <shardflow/core/shape.h>
#include <shardflow/parallel/shard_box.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

/// One contiguous copy between two local blocks (row-major), offsets and length in bytes.
struct ByteRun {
  int64_t source_offset = 0;  ///< where the bytes start in the source rank's local block
  int64_t target_offset = 0;  ///< where they go in the target rank's local block
  int64_t bytes = 0;          ///< how many
  /// Same offsets and length.
  bool operator==(const ByteRun& o) const {
    return source_offset == o.source_offset && target_offset == o.target_offset && bytes == o.bytes;
  }
};

/// The part of a target rank's block that one source rank supplies.
struct ReshardPiece {
  int source_rank = 0;         ///< the rank (of the source layout's device matrix) read from
  ShardBox box;                ///< the elements, in global coordinates
  std::vector<ByteRun> runs;   ///< the copies, ascending in both offsets
  /// The bytes its runs copy.
  int64_t bytes() const;
};

/// What one target rank needs: its block and where every element of it comes from.
struct TargetPlan {
  int target_rank = 0;               ///< the rank (of the target layout's device matrix)
  ShardBox box;                      ///< the block it holds under the target layout
  int64_t shard_bytes = 0;           ///< the bytes of that block
  std::vector<ReshardPiece> pieces;  ///< ordered by source rank, then box; none for an empty block
  /// The bytes its pieces read: always shard_bytes (every element once).
  int64_t bytes_read() const;
};

/// The whole plan: every target rank's TargetPlan.
struct ReshardPlan {
  Shape global;                      ///< the tensor's global shape
  DType dtype = DType::kF32;         ///< its element type
  TensorLayout from;                 ///< the layout it is held under, on M ranks
  TensorLayout to;                   ///< the layout it is wanted under, on N ranks
  std::vector<ShardBox> sources;     ///< each source rank's block, by rank (M of them)
  std::vector<TargetPlan> targets;   ///< by target rank (N of them)
};

/// The pieces target rank `target_rank` of `to` needs from the ranks of `from` (a loading rank
/// plans only its own part). M and N are the device counts of the layouts' device matrices.
/// Throws InvalidArgument for a partial layout or a target rank outside `to`, ShapeError for a
/// shape a layout does not fit (number of dims, a split that does not divide a dim), naming
/// which side ("reshard source" or "reshard target") and the rule.
TargetPlan plan_reshard_target(const Shape& global, DType dtype, const TensorLayout& from, const TensorLayout& to,
                               int target_rank);

/// Every target rank's plan (plan_reshard_target for each), and each source rank's block.
/// Same refusals.
ReshardPlan plan_reshard(const Shape& global, DType dtype, const TensorLayout& from, const TensorLayout& to);

}  // namespace sf
