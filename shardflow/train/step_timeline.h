/// @file
/// StepTimeline: the callback that records an elastic rank's steps as a measured timeline
/// (pipeline/timeline.h, schedule "elastic": one stage, each step a span) with the job's
/// membership changes as markers, for `sfviz show` (docs/pipeline_viz.md, docs/elastic.md).
/// One object lives through every world of the rank, so the picture shows the steps before and
/// after each change on one clock.
///
/// Threading: written by the training rank's callbacks and by train_elastic between worlds.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include <shardflow/pipeline/timeline.h>
#include <shardflow/train/callback.h>

namespace sf {

/// An elastic rank's steps and membership changes (see the file comment).
class StepTimeline : public Callback {
 public:
  /// Times are microseconds since `origin`.
  explicit StepTimeline(std::chrono::steady_clock::time_point origin);
  /// A step starts when training (re)starts.
  void on_train_begin(const RunContext& ctx) override;
  /// Records the step just done, from the end of the one before.
  void on_step_end(const RunContext& ctx) override;
  /// Marks a membership change detected at `when`.
  void mark(std::chrono::steady_clock::time_point when, const std::string& label);
  /// Writes the timeline file (pipeline/timeline_json.h); IoError if it cannot.
  void write(const std::string& path) const;

 private:
  double since_origin(std::chrono::steady_clock::time_point t) const;

  std::chrono::steady_clock::time_point origin_;
  mutable std::mutex mu_;
  double step_start_ = 0;
  pipeline::Timeline timeline_;
};

}  // namespace sf
