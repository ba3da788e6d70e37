/// @file
/// A timed schedule: for each stage, the actions it ran and when. The planned timeline comes
/// from the simulator (pipeline/simulator.h, arbitrary time units); the measured one from the
/// stage actors' clocks during a training step (microseconds from the step's start). sfviz
/// draws either one the same way (pipeline/render_*.h), and both are written as JSON files.
///
/// Threading: plain values.
#pragma once

#include <string>
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

/// For each stage, the actions it ran and when.
struct Timeline {
  std::string schedule;   ///< "1f1b", ...; empty when unknown
  std::string source;     ///< "planned" or "measured"
  std::string unit;       ///< "unit" (simulated) or "us"
  int stages = 0;         ///< pipeline stages
  int micro_batches = 0;  ///< micro-batches per step
  int chunks = 1;         ///< virtual stages per stage
  std::vector<std::vector<Span>> spans;  ///< [stage] -> spans in run order
};

/// The planned timeline of a schedule: its actions at the simulator's start and finish times.
Timeline planned_timeline(const Schedule& schedule, const SimulationResult& result);

}  // namespace sf::pipeline
