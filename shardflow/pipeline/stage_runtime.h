/// @file
/// StageRuntime: one rank's part of a pipeline-parallel training step, as actors.
///
/// Ranks form a grid of `stages` pipeline stages × `dp` data-parallel replicas: world rank r is
/// stage r / dp, replica r % dp (MindSpore's order: the ranks of a stage are consecutive). The
/// rank's *stage actor* walks its list of the schedule (lowered with transfers,
/// pipeline/transfers.h, and simulated before the first step) and, for each micro-batch it
/// starts, spawns a *micro-batch actor* that owns the micro-batch's stash and runs its F, B and W
/// phases on request; the actor ends with its last phase, so the number alive is the number of
/// micro-batches in flight the schedule allows. Activations go to the next stage and gradients
/// to the previous one by comm Send/Receive with the replica of the same index.
///
/// After the schedule, the step combines gradients: a parameter several stages read
/// (add_pipeline_stage) is summed over them, then every gradient is AllReduced over the stage's
/// replicas (divided by dp when `gradients_mean`). The step's loss is the sum over micro-batches
/// of the last stage's loss (MindSpore's PipelineCell), averaged over the replicas; every rank
/// gets it. A peer that dies or stalls fails the step with PeerLost naming it, after the comm
/// timeout.
///
/// Threading: construct and run_step() on a thread bound to the rank (comm/rank_context.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/stage_split.h>
#include <shardflow/pipeline/timeline.h>

namespace sf::pipeline {

/// How a StageRuntime combines its replicas and whether it records a timeline.
struct StageRuntimeOptions {
  int dp = 1;                   ///< data-parallel replicas per stage
  bool gradients_mean = true;   ///< divide the replicas' gradient sum by dp
  bool record_timeline = false; ///< gather a measured Timeline of every step (a collective)
};

/// What one training step gives this rank.
struct StepResult {
  float loss = 0;                    ///< sum over micro-batches, mean over replicas
  std::vector<Tensor> grads;         ///< per parameter_names(), combined as described above
  int peak_in_flight = 0;            ///< most micro-batch actors alive at once on this rank
  size_t peak_stashed_bytes = 0;     ///< most bytes their stashes held at once
};

/// One rank's part of a pipeline-parallel training step (see the file comment).
class StageRuntime {
 public:
  /// `stages` are all virtual stages of the network (split_stages with this schedule's
  /// p × v stages); `schedule` is compute-only. `param_value(name)` gives the tensor a
  /// parameter's node binds (held by reference: the optimizer updates it between steps).
  /// Throws InvalidArgument if the schedule does not fit the stages or does not simulate.
  StageRuntime(std::shared_ptr<const std::vector<StageGraph>> stages, const Schedule& schedule,
               const std::function<Tensor(const std::string&)>& param_value, StageRuntimeOptions opts = {});
  ~StageRuntime();
  StageRuntime(const StageRuntime&) = delete;
  StageRuntime& operator=(const StageRuntime&) = delete;

  /// The parameters this rank holds (all its chunks), in first-use order.
  const std::vector<std::string>& parameter_names() const;
  /// This rank's pipeline stage (world rank / dp).
  int stage() const;
  /// This rank's replica index within its stage (world rank % dp).
  int replica() const;
  /// The schedule this rank runs, with transfers.
  const Schedule& lowered_schedule() const;

  /// The value of data input `name` for micro-batch `micro` on this rank (its replica's rows).
  using FeedFn = std::function<Tensor(int micro, const std::string& name)>;
  /// Runs one step of the schedule over every micro-batch, then combines the gradients.
  StepResult run_step(const FeedFn& feed);

  /// The last step's measured timeline of every stage (record_timeline only; µs from the step's
  /// first action on any rank).
  const Timeline& last_timeline() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sf::pipeline
