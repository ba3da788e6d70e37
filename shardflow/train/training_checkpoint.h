/// @file
/// A run's whole training state (train/training_state.h) in a distributed checkpoint directory
/// (docs/checkpoint_format.md, version 2), and back: CheckpointDir, a callback that saves every
/// K steps and at the end of training, and resume_from, which loads a committed step into a new
/// Model, resharded to this rank's layout, and returns the point to pass to Model::train.
///
/// @code
///   // every rank of the first job:
///   model.train(3, data, {std::make_shared<sf::CheckpointDir>("run", 30, 3)});
///   // every rank of a new job, the network, Model and dataset built as before:
///   model.train(3, data, callbacks, sf::resume_from(model, data, "run"));  // or "run/step_30"
/// @endcode
///
/// What is stored where: every parameter (BatchNorm's moving statistics included), the
/// optimizer's state tensors and "global_step" are tensors, each with its parameter's block
/// layout (ckpt::parameter_block); the TrainingState scalars are rank 0's "state" and each
/// rank's "state" in the manifest. With several ranks, a parameter the optimizer does not step
/// (moving statistics) is each rank's own: it is also stored as "rank_local.<name>", of shape
/// (ranks, ...), row r being rank r's; the plain "<name>" holds rank 0's.
///
/// Resuming on the configuration that saved (the same rank count and dataset) continues
/// bitwise equal to the uninterrupted run. On another rank count, the dataset position maps
/// only when the global batch (batch size x shards) and the batches per epoch are the same and
/// the dataset is not shuffled (a shuffle is per shard): the step count is then the position,
/// and each rank takes rank 0's moving statistics; anything else is refused, naming the item.
/// Semi-auto and auto parallel models are refused (their first step generates the parameter
/// blocks anew, overwriting what a resume loaded), as is pipeline parallel (untested).
///
/// Threading: every rank of the job saves (a collective) and resumes, on its own thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/data/dataset.h>
#include <shardflow/train/callback.h>
#include <shardflow/train/model.h>
#include <shardflow/train/resume_point.h>

namespace sf {

/// Saves the rank's whole training state to `DIR/step_N` (N the global step) (see the file comment)
/// every `save_every` global steps and after the last step, keeping the newest `keep` steps.
class CheckpointDir : public Callback {
 public:
  /// Saves under `dir` every `save_every` steps (0: only at the end of training), keeping the
  /// newest `keep` steps (0: all). InvalidArgument for an empty dir or a negative count.
  CheckpointDir(std::string dir, int64_t save_every = 0, int keep = 0);
  /// Where training starts: nothing is saved before a step is done.
  void on_train_begin(const RunContext& ctx) override;
  /// Saves when save_every divides the global step.
  void on_step_end(const RunContext& ctx) override;
  /// Saves the last step, unless it is saved already.
  void on_train_end(const RunContext& ctx) override;
  /// The global steps saved so far, oldest first.
  const std::vector<int64_t>& saved() const { return saved_; }

 private:
  void save(const RunContext& ctx);
  std::string dir_;
  int64_t save_every_;
  int keep_;
  int64_t last_ = -1;  // the global step the state on disk (or the start) stands at
  std::vector<int64_t> saved_;
};

/// Restores the committed checkpoint `path` names (`DIR`: its latest step; or `DIR/step_N`) into
/// `model` and this rank's position in `train_set`, and returns the point to pass to
/// Model::train. All or nothing; refused with one line naming the checkpoint and the item: an
/// incomplete or bad checkpoint (ckpt::CheckpointReader), a network or optimizer that does not
/// match (restore_training_state), a dataset position that cannot be mapped, a semi-auto, auto
/// or pipeline parallel model.
ResumePoint resume_from(Model& model, const dataset::Dataset& train_set, const std::string& path);

}  // namespace sf
