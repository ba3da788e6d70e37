/// @file
/// A redistribution plan: the steps that carry a tensor from one TensorLayout to another over
/// the same devices, each a collective on groups of ranks or a local change, with the bytes it
/// sends per rank. Made by plan_redistribution (parallel/redistribution_planner.h), run by
/// apply_redistribution (parallel/redistribution_executor.h); pure data, no communication.
///
/// Step kinds (DESIGN.md's table; B = bytes of a rank's shard before the step, n = group size):
/// @verbatim
///   AllReduce      partial -> not partial on `axes`              2(n-1)/n * B (ring)
///   ReduceScatter  partial on `axes` -> split dims[0] by them      (n-1)/n * B
///   AllGather      split dims[0] by `axes` (its minor ones) -> not   (n-1) * B
///   AlltoAll       split dims[0] by `axes` -> split dims[1] by them  (n-1)/n * B
///   Slice          replicated on `axes` -> split `dims` by them        0 (local)
///   Partial        replicated on `axes` -> partial on them             0 (local: the first rank
///                  along them keeps its value, the others hold zeros)
/// @endverbatim
/// A step's `before` and `after` are on one device matrix (the common refinement of the two
/// layouts' matrices, see parallel/mesh_refinement.h), its groups run along `axes` and list
/// world ranks in ascending order.
///
/// Threading: plain values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <shardflow/core/dtype.h>
#include <shardflow/core/shape.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

/// What a step does (the table above).
enum class StepKind {
  kAllReduce,      ///< partial -> not partial
  kReduceScatter,  ///< partial -> split
  kAllGather,      ///< split -> not split
  kAlltoAll,       ///< split on one dim -> split on another
  kSlice,          ///< replicated -> split, locally
  kPartial,        ///< replicated -> partial, locally
};

/// "AllReduce", "ReduceScatter", "AllGather", "AlltoAll", "Slice", "Partial".
std::string_view step_kind_name(StepKind kind);

/// One step of a plan: a collective on groups of ranks, or a local change.
struct RedistributionStep {
  StepKind kind = StepKind::kSlice;  ///< what it does
  TensorLayout before;  ///< the layout it starts from
  TensorLayout after;   ///< the layout it leaves
  std::vector<int> axes;  ///< device-matrix axes of `before`: the group's, or those a local step uses
  std::vector<int> dims;  ///< tensor dims concerned (AlltoAll: {from, to}); none for AllReduce, Partial
  double bytes = 0;       ///< sent per rank

  /// False for the local steps (Slice, Partial).
  bool communicates() const { return kind != StepKind::kSlice && kind != StepKind::kPartial; }
  /// The group `rank` takes part in, ascending world ranks; empty for a local step.
  std::vector<int> group(int rank) const;
  /// Every group of the step, ordered by first rank; none for a local step.
  std::vector<std::vector<int>> groups() const;
  /// "AllGather dim 1 over axes (0) groups [0,4] [1,5] [2,6] [3,7], 64 bytes".
  std::string str() const;
};

/// The steps that carry a tensor from one layout to another (see the file comment).
struct RedistributionPlan {
  TensorLayout from;      ///< the layout it starts from, as given
  TensorLayout to;        ///< the layout it ends in, as given
  Shape shape;            ///< global shape
  DType dtype = DType::kF32;  ///< the tensor's dtype
  std::vector<RedistributionStep> steps;  ///< in the order they run

  /// Total bytes sent per rank.
  double bytes() const;
  /// The groups of the plan's collectives that `rank` belongs to, each once, in step order.
  std::vector<std::vector<int>> groups_of(int rank) const;
  /// The layouts, then one step per line.
  std::string str() const;
};

}  // namespace sf
