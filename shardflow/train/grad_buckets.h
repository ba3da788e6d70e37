/// @file
/// Gradient buckets for data parallel: which gradients share one AllReduce, and the graph
/// nodes that reduce them inside the training step, so that communication overlaps the rest of
/// the backward pass.
///
/// Buckets follow the order in which backward produces the gradients (ascending node id:
/// autodiff emits the last layer's gradients first). A bucket takes gradients until it holds
/// at least `bucket_bytes` (PyTorch DDP's rule; 0 = one gradient per bucket). Gradients under
/// kSmallGradientBytes (biases) all go in one last bucket instead: they are side branches of the
/// backward chain, which the actor scheduler (CAF runs the most recently readied actor first)
/// computes only when the chain is done, so a bucket waiting for one would hold back every
/// later bucket (the collective actor runs them in program order); sent last, they cost one
/// small message. A bucket of
/// several gradients is packed by FlattenConcat into one flat buffer, AllReduced (sum) once and
/// read back in place by its consumers at each gradient's element offset; a bucket of one is
/// AllReduced as it is. Because the AllReduce nodes are appended in bucket order, the group's
/// collective actor (actors/collective_actor.h) runs them in the order their inputs become
/// ready, and bucket k is on the wire while backward computes bucket k+1's gradients.
///
/// Threading: pure functions on a graph being built (one thread).
#pragma once

#include <cstdint>
#include <vector>

#include <shardflow/ops/collective_attrs.h>
#include <shardflow/ops/graph.h>

namespace sf {

/// Gradients smaller than this go in one last bucket (see above).
inline constexpr int64_t kSmallGradientBytes = int64_t{64} << 10;

/// Indices into `bytes` grouped into buckets, in the order given (see the rule above).
std::vector<std::vector<size_t>> plan_buckets(const std::vector<int64_t>& bytes, int64_t bucket_bytes);

/// The nodes append_grad_all_reduce() added.
struct ReducedGradients {
  std::vector<std::vector<size_t>> buckets;  ///< indices into the gradients, in reduction order
  std::vector<int> all_reduce;               ///< per bucket: its AllReduce node
  /// Per gradient: the node holding its reduced value (scaled, if asked), and the element
  /// offset of the gradient in it (0 with the gradient's own shape for a bucket of one; the
  /// flat bucket otherwise).
  ///@{
  std::vector<int> node;
  std::vector<int64_t> offset;
  ///@}
};

/// Appends the bucketed AllReduce(sum) of `grads` on `group`, each bucket followed by a Mul
/// by `scale` unless scale is 1 (gradients_mean: 1 / group size).
ReducedGradients append_grad_all_reduce(Graph& g, const std::vector<int>& grads, const GroupRef& group,
                                        int64_t bucket_bytes, float scale = 1.0f);

/// Per gradient, a node with the gradient's own shape: the reduced value itself for a bucket of
/// one, else its slice of the flat bucket (StridedSlice + Reshape, copies). For fetching.
std::vector<int> unpack_reduced(Graph& g, const ReducedGradients& r, const std::vector<int>& grads);

}  // namespace sf
