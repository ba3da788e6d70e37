/// @file
/// CheckpointDir: the callback that saves a rank's whole training state to a distributed
/// checkpoint directory every K steps and at the end of training (train/training_checkpoint.h
/// says what is stored where).
///
/// Threading: every rank of the job saves (a collective), on its own thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/train/callback.h>

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

}  // namespace sf
