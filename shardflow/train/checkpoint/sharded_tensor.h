/// @file
/// ShardedTensor: one tensor as a rank holds it for a checkpoint — its name, this rank's local
/// block, the global shape and the layout it is spread by, and this rank's index in the
/// layout's device matrix. What a rank passes to save_checkpoint_dir, and how a loader names
/// the block it wants.
///
/// Three ways to describe the holding:
///   - whole(name, t): every rank that lists it holds it whole (stand-alone, data parallel's
///     replicated parameters, a scalar step count); one copy is written.
///   - block(name, t, global, offset): the rank holds the block of `t`'s shape at `offset`
///     (a semi-auto parallel Parameter's value and offset()); the layout is derived from it.
///   - an explicit TensorLayout and layout rank (seed 001's Layout on 8 devices).
///
/// Threading: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/core/shape.h>
#include <shardflow/core/tensor.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf::ckpt {

/// One tensor as this rank holds it.
struct ShardedTensor {
  std::string name;      ///< unique within a checkpoint
  Tensor local;          ///< this rank's block, row-major
  Shape global;          ///< the whole tensor's shape
  TensorLayout layout;   ///< how it is spread (never partial)
  int layout_rank = 0;   ///< this rank's index in layout.mesh()

  /// `t` held whole: layout (1,..) on one device, layout rank 0.
  static ShardedTensor whole(std::string name, Tensor t);
  /// `t` is the block at `offset` (one per dim) of a tensor of shape `global`: the layout is
  /// one mesh axis per dim, of the dim's number of blocks, and the layout rank the block's
  /// row-major index. Throws ShapeError if the block does not tile `global` evenly.
  static ShardedTensor block(std::string name, Tensor t, Shape global, const std::vector<int64_t>& offset);
};

/// The layout and layout rank that make the block of shape `block` at `offset` of a tensor of
/// shape `global` one rank's shard (see ShardedTensor::block); `what` names it in errors.
std::pair<TensorLayout, int> block_layout(const Shape& global, const Shape& block, const std::vector<int64_t>& offset,
                                          const std::string& what);

}  // namespace sf::ckpt
