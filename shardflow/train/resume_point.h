/// @file
/// ResumePoint: where a run resumed by Model::train continues — the dataset epoch and the step
/// within it — and the point a callback's RunContext stands at. A run stopped after any step and
/// resumed at its point (with the state of train/training_state.h restored) walks exactly the
/// batches the uninterrupted run would have walked next.
#pragma once

#include <cstdint>

#include <shardflow/train/callback.h>

namespace sf {

/// A position in training: the next step is step `step` + 1 of dataset epoch `epoch` + 1.
struct ResumePoint {
  /// Epochs done: the dataset epoch (counted from 0, data/dataset.h) the next step reads, and
  /// MindSpore's initial_epoch (the callbacks number the resumed epoch `epoch` + 1).
  int64_t epoch = 0;
  /// Steps of that epoch done, in [0, steps per epoch).
  int64_t step = 0;
  /// Equal positions.
  bool operator==(const ResumePoint&) const = default;
};

/// The point a run stands at when a callback sees `ctx`: after the step of on_step_end (a step
/// that ends its epoch gives {next epoch, 0}), after the epoch of on_epoch_end and
/// on_train_end, before the epoch of on_epoch_begin and where training starts at
/// on_train_begin.
ResumePoint resume_point_of(const RunContext& ctx);

}  // namespace sf
