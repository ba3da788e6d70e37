/// @file
/// What the checkpoint callback (train/checkpoint_dir_callback.h) and resume_from
/// (train/resume_from.h) agree on about a rank's own tensors: with several ranks, a parameter the
/// optimizer does not step (BatchNorm's moving statistics, updated from the rank's own batches)
/// differs between ranks, so each rank's copy is also stored as row r of "rank_local.<name>", of
/// shape (ranks, ...).
///
/// Threading: plain functions of the calling rank's thread.
#pragma once

#include <set>
#include <string>

#include <shardflow/core/tensor.h>
#include <shardflow/train/cell.h>
#include <shardflow/train/checkpoint/sharded_tensor.h>
#include <shardflow/train/optimizer.h>

namespace sf::detail {

/// The prefix of a rank-local tensor's name in a checkpoint.
inline constexpr const char* kRankLocal = "rank_local.";

/// The calling thread's rank and the number of ranks (0 and 1 with no rank bound).
struct Rank {
  int rank = 0;
  int ranks = 1;
};
Rank this_rank();

/// The names of `net`'s parameters that `optimizer` does not step.
std::set<std::string> unstepped(nn::Cell& net, nn::Optimizer& optimizer);

/// Rank r's copy of `t` as row r of "rank_local.<name>", of shape (r.ranks, t's shape).
ckpt::ShardedTensor rank_row(const std::string& name, const Tensor& t, Rank r);

}  // namespace sf::detail
