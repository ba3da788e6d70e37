/// @file
/// Figures read off a timeline (pipeline/timeline.h), planned or measured, the same way: how long
/// each stage computed, how long it sat idle, and how many micro-batches' activations it held
/// at once. For a planned timeline of a compute-only schedule they equal the simulator's
/// (pipeline/simulator.h); tests/pipeline/timeline_test.cc checks that.
///
/// Definitions (docs/pipeline_viz.md):
/// @verbatim
///   makespan         latest finish - earliest start, over every span of every stage
///   busy             sum of a stage's F, B and W durations; sends and receives count as idle,
///                    since a measured receive is mostly waiting
///   idle             makespan - busy
///   bubble fraction  idle / makespan per stage; over the pipeline, idle share of p × makespan
///   transfer         sum of a stage's send and receive durations
///   hidden transfer  the part of them during which the stage computed (spans overlap only in a
///                    measured timeline: transfers run on their own actors beside the compute)
///   peak stashed     most (micro-batch, chunk) pairs on the stage whose F has run and whose B
///                    (W, when the timeline has any W) has not, walking the stage in time order
///   collective       time during which the stage ran at least one of its collectives (the union
///                    of their spans: concurrent ones on two groups count once)
///   collective in    the part of it inside the stage's F, B and W spans
///     compute
///   collective       collective in compute over busy, summed over the stages: how much of the
///     share          stages' compute went to their own (operator-parallel) communication
/// @endverbatim
/// Collectives do not move the makespan: a stage runs them inside its F, B and W spans.
///
/// Threading: pure functions.
#pragma once

#include <vector>

#include <shardflow/pipeline/timeline.h>

namespace sf::pipeline {

/// One stage's figures (defined above).
struct StageStats {
  double busy = 0;             ///< sum of its F, B and W durations
  double idle = 0;             ///< makespan - busy
  double bubble_fraction = 0;  ///< idle / makespan
  int peak_stashed = 0;        ///< most micro-batches held between F and B (or W)
  int compute_actions = 0;  ///< F, B and W spans
  double transfer = 0;         ///< sum of its send and receive durations
  double hidden_transfer = 0;  ///< the part of them that overlapped its F, B and W spans
  int collectives = 0;             ///< collectives the stage ran inside its phases
  double collective = 0;           ///< time with at least one of them running
  double collective_in_compute = 0;  ///< the part of it inside its F, B and W spans
};

/// The figures of a whole timeline and of each of its stages.
struct TimelineStats {
  double start = 0;                ///< earliest start over all stages
  double finish = 0;               ///< latest finish
  double makespan = 0;             ///< finish - start
  double bubble_fraction = 0;      ///< idle share of stages × makespan
  double transfer = 0;             ///< every stage's transfer time
  double hidden_transfer = 0;      ///< the part of it hidden behind compute
  double hidden_transfer_share = 0;  ///< hidden_transfer / transfer (0 with no transfer)
  int collectives = 0;               ///< every stage's collectives
  double collective = 0;             ///< every stage's collective time
  double collective_in_compute = 0;  ///< the part of it inside F, B and W spans
  double collective_share = 0;       ///< collective_in_compute / every stage's busy time (0 with none)
  std::vector<StageStats> stages;  ///< one per stage
};

/// The figures of `timeline`, planned or measured.
TimelineStats timeline_stats(const Timeline& timeline);

}  // namespace sf::pipeline
