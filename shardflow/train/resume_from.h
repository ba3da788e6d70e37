/// @file
/// resume_from: a committed step of a distributed checkpoint directory loaded into a new Model,
/// resharded to this rank's layout, and the point to pass to Model::train
/// (train/training_checkpoint.h says what is stored where and what maps).
///
/// Threading: every rank of the job resumes, on its own thread.
#pragma once

#include <string>

#include <shardflow/data/dataset.h>
#include <shardflow/train/model.h>
#include <shardflow/train/resume_point.h>

namespace sf {

/// Restores the committed checkpoint `path` names (`DIR`: its latest step; or `DIR/step_N`) into
/// `model` and this rank's position in `train_set`, and returns the point to pass to
/// Model::train. In semi-auto, auto and pipeline parallel it first builds the step
/// (Model::prepare; every rank calls resume_from, as it would take its first step). All or
/// nothing; refused with one line naming the checkpoint and the item: an incomplete or bad
/// checkpoint (ckpt::CheckpointReader), a network or optimizer that does not match
/// (restore_training_state), a dataset position that cannot be mapped.
ResumePoint resume_from(Model& model, const dataset::Dataset& train_set, const std::string& path);

}  // namespace sf
