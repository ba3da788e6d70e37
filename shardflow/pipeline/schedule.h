/// @file
/// A pipeline schedule as data: for p stages (ranks), m micro-batches and v model chunks per
/// rank, the ordered list of actions (pipeline/action.h) each stage runs. Generators build the
/// compute-only lists (F, B, W) of the schedules we support; sends and receives are a separate
/// lowering pass, and pipeline/simulator.h checks and times a schedule before anything runs.
///
/// Text form: one line per stage, stage 0 first, actions separated by one space.
///
/// Threading: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <shardflow/pipeline/action.h>

namespace sf::pipeline {

/// The pipeline schedules make_schedule() generates.
enum class ScheduleKind {
  kGPipe,            ///< every forward, then every backward (Huang et al. 2019)
  kOneFOneB,         ///< 1F1B: p-s-1 warm-up forwards, steady F/B pairs, cool-down (PipeDream-Flush)
  kInterleaved1F1B,  ///< 1F1B over v model chunks per rank in Megatron-LM's order (Narayanan et al. 2021)
  kZeroBubbleH1,     ///< ZB-H1: B split into B (input grad) and W (weight grad) (Qi et al. 2023)
};

/// The ordered actions each stage runs, for p stages, m micro-batches and v chunks per rank.
struct Schedule {
  std::string name;       ///< "gpipe", "1f1b", "interleaved_1f1b", "zb_h1"; empty when parsed from text
  int stages = 0;         ///< p
  int micro_batches = 0;  ///< m
  int chunks = 1;         ///< v, model chunks (virtual stages) per rank
  std::vector<std::vector<Action>> actions;  ///< [stage] -> actions in run order
};

/// "gpipe", "1f1b", "interleaved_1f1b" or "zb_h1".
std::string_view schedule_name(ScheduleKind kind);
/// The kind named so; throws InvalidArgument listing the names for another one.
ScheduleKind schedule_kind(std::string_view name);

/// The schedule of `kind` for p stages, m micro-batches and v chunks per rank. Throws
/// InvalidArgument when p, m or v is below 1, when v != 1 for a schedule without chunks, and
/// for interleaved 1F1B when p < 2, v < 2 or m is not a multiple of p (Megatron-LM's
/// requirement: micro-batches go round the ranks in groups of p).
Schedule make_schedule(ScheduleKind kind, int stages, int micro_batches, int chunks = 1);

/// True if the schedule splits the backward into B and W (it has W actions), as ZB-H1 does.
bool splits_backward(const Schedule& schedule);

/// One line per stage, e.g.\ `"F0 F1 B0 B1\nF0 B0 F1 B1\n"`.
std::string to_text(const Schedule& schedule);

/// The schedule written by to_text; p is the number of lines. m and v are given, not guessed,
/// so that a list missing a micro-batch is caught by validation rather than shrinking m.
/// Throws InvalidArgument naming the line for a bad action.
Schedule parse_schedule(std::string_view text, int micro_batches, int chunks = 1);

}  // namespace sf::pipeline
