// local_block: the block of a whole tensor that one rank holds under a layout — how a rank
// takes its part of the global batch it is fed (semi-auto parallel), and what tests compare
// shards with.
//
// A block cut along dim 0 only is a view sharing the tensor's storage (Tensor::rows); any
// other block is copied. Threading: a pure function.
#pragma once

#include <shardflow/core/tensor.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

// Refuses (ShapeError) a tensor the layout does not fit; a partial layout's block is the
// tensor's block (which share a rank holds is not the layout's to say).
Tensor local_block(const Tensor& whole, const TensorLayout& layout, int64_t rank);

}  // namespace sf
