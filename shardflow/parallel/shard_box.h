/// @file
/// ShardBox: the block of a global tensor one rank holds under a TensorLayout, as a box — per
/// dim the first element and the number of elements — and the intersection of two boxes. It is
/// the geometry resharding works in: a rank saved under one layout and a rank loading under
/// another exchange exactly the intersection of their boxes (parallel/reshard_plan.h).
///
/// The box is TensorLayout::slice (MindSpore's row-major rank order, DESIGN.md): a replicated
/// dim is whole, a dim split over device axes is the block those axes' coordinates index. A
/// rank's local tensor is its box's elements in row-major order.
///
/// Only values at rest have a box to save or load: a partial layout (every rank holds a share
/// of a pending sum) is refused.
///
/// Threading: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/core/shape.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

/// A box in a global tensor: one DimSlice per dim (none for a scalar).
struct ShardBox {
  std::vector<DimSlice> dims;  ///< per dim, the elements [offset, offset + extent)

  /// The extents: the shape of the local tensor holding the box.
  Shape shape() const;
  /// The number of elements (1 for a scalar box, 0 if any extent is 0).
  int64_t numel() const;
  /// Whether the box holds no element.
  bool empty() const { return numel() == 0; }
  /// "[0:4, 2:3]" (begin:end per dim), "[]" for a scalar.
  std::string str() const;
  /// Same slices.
  bool operator==(const ShardBox& o) const { return dims == o.dims; }
};

/// The box rank `rank` holds of a tensor of shape `global` under `layout`. Throws
/// InvalidArgument for a partial layout (a checkpoint holds values at rest) or a rank outside
/// the layout's device matrix, ShapeError for a shape the layout does not fit (number of dims,
/// a split that does not divide a dim); messages start with `what`.
ShardBox shard_box(const TensorLayout& layout, const Shape& global, int64_t rank,
                   std::string_view what = "shard box");

/// The elements both boxes hold; empty (numel() == 0) if they do not meet. Both must have the
/// same number of dims.
ShardBox intersect(const ShardBox& a, const ShardBox& b);

}  // namespace sf
