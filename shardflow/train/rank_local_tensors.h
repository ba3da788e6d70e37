/// @file
/// What the checkpoint callback (train/checkpoint_dir_callback.h) and resume_from
/// (train/resume_from.h) agree on about a rank's own tensors: with several ranks (several
/// replicas of a pipeline stage), a parameter the optimizer does not step (BatchNorm's moving
/// statistics, updated from the rank's own batches) differs between them, so each one's copy is
/// also stored as its row of "rank_local.<name>", of shape (rows, ...): row r is rank r's, or in
/// pipeline parallel replica r's of the stage that holds the parameter.
///
/// Threading: plain functions of the calling rank's thread.
#pragma once

#include <set>
#include <string>

#include <shardflow/core/tensor.h>
#include <shardflow/train/checkpoint/sharded_tensor.h>
#include <shardflow/train/model.h>

namespace sf::detail {

/// The prefix of a rank-local tensor's name in a checkpoint.
inline constexpr const char* kRankLocal = "rank_local.";

/// The row this rank writes and reads of its rank-local tensors, and their row count: the
/// rank and the rank count (0 and 1 with no rank bound), or in pipeline parallel the rank's
/// replica of its stages and the replica count (Model::replica).
struct Row {
  int index = 0;
  int count = 1;
};
Row local_row(Model& model);

/// The names of the parameters `model` holds on this rank (Model::held_parameters) that its
/// optimizer does not step, when each row keeps its own (count > 1); empty otherwise.
std::set<std::string> rank_local_names(Model& model);

/// This row's copy of `t` as its row of "rank_local.<name>", of shape (r.count, t's shape).
ckpt::ShardedTensor rank_row(const std::string& name, const Tensor& t, Row r);

}  // namespace sf::detail
