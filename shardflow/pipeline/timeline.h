/// @file
/// A timed schedule: for each stage, the actions it ran and when. The planned timeline comes
/// from the simulator (pipeline/simulator.h, arbitrary time units); the measured one from the
/// stage actors' clocks during a training step (microseconds from the step's start). sfviz
/// draws either one the same way (pipeline/render_*.h), and both are written as JSON files.
/// A measured timeline of a stage that is operator-parallel over several devices also holds the
/// collectives its F, B and W phases ran (a tensor-parallel AllReduce, say), which the plan
/// cannot know of. Any timeline may hold markers: moments drawn as a line across all stages,
/// such as the membership changes of an elastic job.
///
/// An elastic job's timeline (schedule kElasticSchedule) is not a pipeline's: its one "stage" is
/// one rank, each of its steps a span of a Forward action whose micro-batch is the step's index,
/// and its markers the job's membership changes (docs/pipeline_viz.md).
///
/// Threading: plain values.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/pipeline/action.h>
#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/simulator.h>

namespace sf::pipeline {

/// One action of a stage and when it ran.
struct Span {
  Action action;      ///< what ran
  double start = 0;   ///< when it started, in the timeline's unit
  double finish = 0;  ///< when it finished
};

/// One collective a stage ran inside one of its F, B or W phases, and when. Stage-to-stage sends
/// and receives are not here: they are Spans of their own actions.
struct CollectiveSpan {
  std::string op;       ///< the collective's op, e.g. "AllReduce", "AllGather", "ReduceScatter"
  std::string group;    ///< its group as the stage's program names it ("0-1": local ranks 0 and 1)
  int micro_batch = 0;  ///< the micro-batch whose phase ran it
  int chunk = 0;        ///< the model chunk whose phase ran it
  char phase = 'F';     ///< that phase: 'F', 'B' or 'W'
  double start = 0;     ///< when it started, in the timeline's unit
  double finish = 0;    ///< when it finished
};

/// A moment of the timeline drawn across all its stages, with a label saying what happened, e.g.
/// "generation 1: lost rank 2; 4 -> 3 ranks; rolled back to step 17".
struct Marker {
  double time = 0;    ///< when, in the timeline's unit and on its spans' clock; finite and >= 0
  std::string label;  ///< what happened: one line, at most kMaxMarkerLabel bytes of UTF-8
};

/// The longest marker label a timeline file may hold, in bytes: a label is a line, not a log.
inline constexpr std::size_t kMaxMarkerLabel = 200;

/// The schedule name of an elastic job's timeline: the steps of one rank, each a span of a
/// Forward action whose micro-batch is the step's index, and the membership changes as markers.
inline constexpr std::string_view kElasticSchedule = "elastic";

/// For each stage, the actions it ran and when.
struct Timeline {
  std::string schedule;   ///< "1f1b", ..., "elastic" (kElasticSchedule); empty when unknown
  std::string source;     ///< "planned" or "measured"
  std::string unit;       ///< "unit" (simulated) or "us"
  int stages = 0;         ///< pipeline stages (1 for an elastic job: its rank)
  int micro_batches = 0;  ///< micro-batches per step (for an elastic job, more than its highest step index)
  int chunks = 1;         ///< virtual stages per stage
  std::vector<std::vector<Span>> spans;  ///< [stage] -> spans in run order
  /// [stage] -> the collectives inside the stage, by start (local rank 0's, measured only);
  /// empty when none were recorded, as for every planned timeline.
  std::vector<std::vector<CollectiveSpan>> collectives;
  /// Moments drawn across all stages (an elastic job's membership changes), in any order; empty
  /// for most timelines, every planned one included.
  std::vector<Marker> markers;
};

/// Whether any stage of `timeline` holds a collective.
bool has_collectives(const Timeline& timeline);

/// Whether `timeline` is an elastic job's steps (schedule kElasticSchedule), which the pictures
/// and figures speak of as steps, not as a pipeline's micro-batches.
inline bool is_elastic(const Timeline& timeline) { return timeline.schedule == kElasticSchedule; }

/// The planned timeline of a schedule: its actions at the simulator's start and finish times.
Timeline planned_timeline(const Schedule& schedule, const SimulationResult& result);

}  // namespace sf::pipeline
