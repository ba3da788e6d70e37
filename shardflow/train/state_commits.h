/// @file
/// StateCommits: the callback that keeps an elastic rank's last two consistent states in memory
/// (train/training_state.h): the state a world starts from, then the state after each step. Two
/// suffice: a step's gradients need every rank's, so when a rank dies no survivor is more than one step
/// ahead of another, and the agreed step (the least committed) is the newest or the one before
/// on every survivor.
///
/// Threading: written by the training rank's callbacks, read after training stopped.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>

#include <shardflow/train/callback.h>
#include <shardflow/train/training_state.h>

namespace sf {

/// In-memory commits of a rank's state (see the file comment).
class StateCommits : public Callback {
 public:
  /// Starts with `start`, the state of `global_step` the world starts from: for a membership
  /// change's agreed state, as the world that captured it saved it (before it was mapped to this
  /// world), so that a change before this world's first step maps that state again, as a restart
  /// from its checkpoint would, not a mapping of it.
  StateCommits(int64_t global_step, TrainingState start);
  /// Keeps the state after the step.
  void on_step_end(const RunContext& ctx) override;
  /// The global step of the newest state.
  int64_t newest_step() const;
  /// The state kept for `global_step`, if it is one of the two.
  std::optional<TrainingState> at(int64_t global_step) const;

 private:
  void keep(const RunContext& ctx);

  mutable std::mutex mu_;
  std::deque<std::pair<int64_t, TrainingState>> states_;  // oldest first, at most 2
  std::optional<nlohmann::json> blocks_;                  // state_blocks of this world, from the first step
};

}  // namespace sf
