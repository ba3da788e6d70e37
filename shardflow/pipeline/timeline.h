// A timed schedule: for each stage, the actions it ran and when. The planned timeline comes
// from the simulator (pipeline/simulator.h, arbitrary time units); the measured one from the
// stage actors' clocks during a training step (microseconds from the step's start). sfviz
// draws either one the same way (pipeline/render_*.h), and both are written as JSON files.
//
// Threading: plain values.
#pragma once

#include <string>
#include <vector>

#include <shardflow/pipeline/action.h>
#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/simulator.h>

namespace sf::pipeline {

struct Span {
  Action action;
  double start = 0;
  double finish = 0;
};

struct Timeline {
  std::string schedule;   // "1f1b", ...; empty when unknown
  std::string source;     // "planned" or "measured"
  std::string unit;       // "unit" (simulated) or "us"
  int stages = 0;
  int micro_batches = 0;
  int chunks = 1;
  std::vector<std::vector<Span>> spans;  // [stage] -> spans in run order
};

// The planned timeline of a schedule: its actions at the simulator's start and finish times.
Timeline planned_timeline(const Schedule& schedule, const SimulationResult& result);

}  // namespace sf::pipeline
