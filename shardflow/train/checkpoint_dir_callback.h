/// @file
/// CheckpointDir: the callback that saves a rank's whole training state to a distributed
/// checkpoint directory every K steps and at the end of training (train/training_checkpoint.h
/// says what is stored where).
///
/// Saves are asynchronous by default (train/checkpoint/async_save.h): the step waits for phase
/// 1's agreement and a copy of the rank's state (capture_training_state's, which the writer
/// takes as it is: no second copy); a background thread writes it, and the save
/// commits at the next save or at the end of training, so the last step is committed when
/// Model::train returns.
///
/// Threading: every rank of the job saves (a collective), on its own thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/train/callback.h>
#include <shardflow/train/checkpoint/async_save.h>

namespace sf {

/// Saves the rank's whole training state to `DIR/step_N` (N the global step) (see the file comment)
/// every `save_every` global steps and after the last step, keeping the newest `keep` steps.
class CheckpointDir : public Callback {
 public:
  /// Saves under `dir` every `save_every` steps (0: only at the end of training), keeping the
  /// newest `keep` steps (0: all); in the background unless `async` is false (then each save
  /// blocks its step until committed). InvalidArgument for an empty dir or a negative count.
  CheckpointDir(std::string dir, int64_t save_every = 0, int keep = 0, bool async = true);
  /// Where training starts: nothing is saved before a step is done.
  void on_train_begin(const RunContext& ctx) override;
  /// Saves when save_every divides the global step.
  void on_step_end(const RunContext& ctx) override;
  /// Saves the last step, unless it is saved already, and waits until it is committed.
  void on_train_end(const RunContext& ctx) override;
  /// The global steps committed so far, oldest first (a save in flight is not listed).
  const std::vector<int64_t>& saved() const { return saved_; }
  /// Finishes a save in flight (a collective, as the save): throws its error on every rank alike.
  void wait();

 private:
  void save(const RunContext& ctx);
  std::string dir_;
  int64_t save_every_;
  int keep_;
  int64_t last_ = -1;  // the global step the state on disk (or the start) stands at
  std::vector<int64_t> saved_;
  std::unique_ptr<ckpt::AsyncCheckpointWriter> writer_;  // null when saves are synchronous
  int64_t in_flight_ = -1;                                // the step the writer is saving
};

}  // namespace sf
