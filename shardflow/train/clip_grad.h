/// @file
/// Gradient clipping by global norm (MindSpore ops.clip_by_global_norm, PyTorch
/// torch.nn.utils.clip_grad_norm_): the L2 norm of all gradients together, as one device holding
/// the whole parameters would compute it, and every gradient scaled by
/// min(1, max_norm / (norm + 1e-6)).
///
/// "Global" under sharding: a rank may hold only blocks of the gradients (semi-auto parallel,
/// train/semi_auto_step.h), and the same block may be held by several ranks (its replicas, whose
/// copies are equal once the mirror AllReduce has summed them). The norm one device would see
/// counts every element of every whole gradient once, so each block must be counted once over
/// the world: here only the lowest rank of the ranks holding a block adds its squares (exact,
/// where weighting every copy by 1 / replicas would add rounding), every rank's partial sum is
/// AllReduced (summed) over the group, and every rank takes the square root of the same sum, so
/// all scale their blocks by the same factor. Counting a replicated block on each replica
/// inflates the norm; counting only the blocks one rank holds shrinks it (the "norm shifted by
/// ~10%" of a naive implementation). GradPlacement says which blocks this rank counts.
///
/// Threading: the functions with a group are collectives: every rank of the group calls them,
/// in the same order as its other collectives on that group, from one thread per rank.
#pragma once

#include <cstdint>
#include <vector>

#include <shardflow/comm/group.h>
#include <shardflow/core/tensor.h>

namespace sf::nn {

/// Where the gradients a rank holds lie among the ranks: which ones it counts in the global
/// norm, and the group whose ranks together hold every block. The default (no group, nothing
/// listed) is one device, or ranks that each hold every gradient whole and equal (data
/// parallel after the gradient AllReduce): the local norm is the global one.
struct GradPlacement {
  /// Per gradient: whether this rank adds its squares to the global sum. Exactly one rank of
  /// those holding the same block counts it (the lowest); empty means every gradient counts.
  /// Bytes, not std::vector<bool>: copying an empty vector<bool> trips UBSan in libstdc++ 12.
  std::vector<uint8_t> counted = {};
  /// The ranks whose partial sums make the global one (the world in semi-auto parallel); the
  /// sum is AllReduced over it. Undefined, or of one rank: no communication.
  comm::Group group = {};
};

/// What the clipping factor adds to the norm: scale = max_norm / (norm + kClipEps) (PyTorch's
/// 1e-6), so that a zero norm divides safely.
inline constexpr double kClipEps = 1e-6;

/// The L2 norm of all `grads` together as one device would compute it: the square root of the
/// sum, over the counted gradients of every rank of placement.group, of their squared elements
/// (each partial sum in double, AllReduced as f32). Equal on every rank of the group. Throws
/// InvalidArgument when placement.counted is not empty and its size differs from grads'.
double global_grad_norm(const std::vector<Tensor>& grads, const GradPlacement& placement = {});

/// Scales every gradient in place by min(1, max_norm / (norm + kClipEps)), norm being
/// global_grad_norm(grads, placement), and returns that norm (before scaling). Gradients whose
/// norm is at most max_norm are left untouched (not even multiplied by 1). A non-finite norm
/// gives the formula's factor, as PyTorch does without error_if_nonfinite (0 for an infinite
/// norm, NaN for a NaN one). Throws InvalidArgument for max_norm <= 0 or not finite, naming it.
/// Gradients shared with other tensors (Tensor copies) change with them: clone them first.
double clip_by_global_norm(std::vector<Tensor>& grads, float max_norm, const GradPlacement& placement = {});

/// The factor clip_by_global_norm() applies for this norm: min(1, max_norm / (norm + kClipEps)).
double clip_scale(double norm, float max_norm);

}  // namespace sf::nn
