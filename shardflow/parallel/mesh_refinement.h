// Refining a device matrix: cutting its axes into sub-axes without renumbering any rank, so
// that layouts on different device matrices of the same devices can be compared.
//
// Row-major rank order makes a device matrix a mixed-radix numbering of the ranks, and an axis
// of size 4 is the same as two consecutive axes of size 2 (major, minor). (2,4) and (4,2) both
// refine to (2,2,2): (2,4)'s second axis is (2,2)'s two last axes, (4,2)'s first axis is the
// two first. A dim split over axis a is then split over a's sub-axes, major first, which puts
// every block on the same rank. Matrices such as (2,3) and (3,2) have no common refinement
// (the planner then goes through a replicated layout).
//
// Threading: pure functions.
#pragma once

#include <optional>

#include <shardflow/parallel/device_matrix.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

// The coarsest matrix that refines both, without axes of size 1; none if the device counts
// differ or no such matrix exists.
std::optional<DeviceMatrix> common_refinement(const DeviceMatrix& a, const DeviceMatrix& b);

// True if every axis of `coarse` is a run of consecutive axes of `fine` (axes of size 1 aside).
bool refines(const DeviceMatrix& fine, const DeviceMatrix& coarse);

// `layout` on `fine` (which must refine its mesh; InvalidArgument otherwise): each axis
// replaced by its sub-axes, axes of size 1 dropped. Same blocks on the same ranks.
TensorLayout refine(const TensorLayout& layout, const DeviceMatrix& fine);

}  // namespace sf
