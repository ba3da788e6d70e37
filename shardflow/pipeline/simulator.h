/// @file
/// Checks a schedule before anything runs and times it on paper. validate_schedule checks the
/// lists are complete (each F, B — and W when the schedule splits B — exactly once per stage,
/// chunk and micro-batch; sends and receives paired when present). simulate_schedule then runs
/// every stage's list in order with given durations, an action starting once the stage is free
/// and its inputs exist: F on virtual stage k after F on k-1 (and after its RECV_F when the
/// schedule has receives), B on k after B on k+1 (the last virtual stage's B after its own F),
/// W after its B, a receive after its send. A schedule whose stages can never all finish is
/// reported as a ScheduleDeadlock naming a stuck stage and the action it can never run.
///
/// Threading: pure functions.
#pragma once

#include <vector>

#include <shardflow/core/error.h>
#include <shardflow/pipeline/schedule.h>

namespace sf::pipeline {

/// Durations in arbitrary units. F = B = W = 1 is the default; {1, 2, 1} is the usual "B costs
/// twice F" model for schedules with a whole backward (W is then unused).
struct ActionCosts {
  double forward = 1;   ///< an F
  double backward = 1;  ///< a B
  double weight = 1;    ///< a W
  double transfer = 0;  ///< a send or receive
};

/// A stage that can never run its next action: the schedule would hang.
class ScheduleDeadlock : public InvalidArgument {
 public:
  /// `stage` can never run `action`; `msg` says why.
  ScheduleDeadlock(int stage, Action action, const std::string& msg, std::string where = {})
      : InvalidArgument(msg, std::move(where)), stage_(stage), action_(action) {}
  /// The stuck stage.
  int stage() const { return stage_; }
  /// The action the stuck stage can never run.
  const Action& action() const { return action_; }

 private:
  int stage_;
  Action action_;
};

/// One stage's simulated run: when each of its actions started and finished, and its figures.
struct StageTimeline {
  std::vector<double> start;   ///< per action, same order as the schedule's list
  std::vector<double> finish;  ///< per action, as start
  double busy = 0;             ///< time spent in actions
  double bubble_fraction = 0;  ///< idle share of the makespan
  int peak_stashed = 0;        ///< most micro-batches (per chunk) with F done and B — W if split — not yet
};

/// A simulated schedule: its length, its idle share and each stage's timeline.
struct SimulationResult {
  double makespan = 0;                ///< the time the last stage finishes
  double bubble_fraction = 0;         ///< idle share of stages × makespan
  std::vector<StageTimeline> stages;  ///< one per stage
};

/// Throws InvalidArgument naming the stage and action that is missing, repeated or out of range.
void validate_schedule(const Schedule& schedule);

/// Validates, then simulates. Throws ScheduleDeadlock if some stage can never finish.
SimulationResult simulate_schedule(const Schedule& schedule, const ActionCosts& costs = {});

}  // namespace sf::pipeline
