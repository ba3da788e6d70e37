/// @file
/// StageRuntime: one rank's part of a pipeline-parallel training step, on the actor runtime.
///
/// Ranks form `stages` groups of `per_stage` devices (world rank r is stage r / per_stage, local
/// rank r % per_stage: MindSpore's order, docs/pipeline.md draws it). The rank's program
/// (pipeline/stage_program.h) — its chunks sharded over the stage's devices, their transfers and
/// backward — is one graph run by one actors/Runtime in streaming mode: a micro-batch is a step
/// of it, and a training step a cycle of `micro_batches` steps. The rank walks its list of the
/// schedule (lowered with transfers, pipeline/transfers.h, and simulated before the first step)
/// and admits each F, B and W phase in the list's order once the one before has run; the
/// transfers are actors of their own: every Receive of the step is posted when it begins and runs
/// in the list's order, so the next micro-batch's activation arrives while the current one
/// computes, and a Send never waits for its receiver. A value a later phase reads stays in its
/// producer's register, so the micro-batches in flight are the ones the schedule allows.
///
/// After the list, the step combines gradients: a parameter several stages read
/// (add_pipeline_stage) is summed over them, then every gradient block over the ranks of its
/// stage that hold the same block (the data-parallel replicas among them), in a small graph of
/// AllReduce, Concat and slice ops run on a second actor Runtime once per step. The step's loss is
/// the sum over micro-batches of the last stage's loss (MindSpore's PipelineCell); every rank
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
#include <shardflow/parallel/sharding/op_strategy.h>
#include <shardflow/parallel/tensor_layout.h>
#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/stage_program.h>
#include <shardflow/pipeline/stage_split.h>
#include <shardflow/pipeline/timeline.h>

namespace sf::pipeline {

/// How a StageRuntime shards its stages, combines its replicas and whether it records a timeline.
struct StageRuntimeOptions {
  int per_stage = 1;             ///< devices per stage (the stage's device matrix)
  bool gradients_mean = true;    ///< average, not sum, over the batch's blocks
  bool record_timeline = false;  ///< gather a measured Timeline of every step (a collective)
  StrategyTable strategies;      ///< the network's strategies (ops of any stage)
};

/// What one training step gives this rank.
struct StepResult {
  float loss = 0;                    ///< sum over micro-batches of the whole micro-batch's loss
  std::vector<Tensor> grads;         ///< per parameter_names(): this rank's blocks, combined
  int peak_in_flight = 0;            ///< most micro-batches between F and their last phase at once
  size_t peak_stashed_bytes = 0;     ///< most bytes their stashed values held at once
};

/// One rank's part of a pipeline-parallel training step (see the file comment).
class StageRuntime {
 public:
  /// The tensor parameter `name` binds on this rank: its block under `layout` of the whole
  /// `shape` (held by reference: the optimizer updates it between steps).
  using ParamFn = std::function<Tensor(const std::string& name, const TensorLayout& layout, const Shape& shape)>;

  /// `stages` are all virtual stages of the network (split_stages with this schedule's
  /// p × v stages); `schedule` is compute-only. Throws InvalidArgument if the schedule does not
  /// fit the stages or the devices, does not simulate, or a strategy does not fit.
  StageRuntime(std::shared_ptr<const std::vector<StageGraph>> stages, const Schedule& schedule,
               const ParamFn& param_value, StageRuntimeOptions opts = {});
  ~StageRuntime();
  StageRuntime(const StageRuntime&) = delete;
  StageRuntime& operator=(const StageRuntime&) = delete;

  /// The parameters this rank holds (all its chunks), in first-use order.
  const std::vector<std::string>& parameter_names() const;
  /// The layout of each (parameter_names() order) over the stage's devices.
  const std::vector<TensorLayout>& parameter_layouts() const;
  /// This rank's pipeline stage (world rank / per_stage).
  int stage() const;
  /// This rank's index within its stage (world rank % per_stage).
  int replica() const;
  /// The schedule this rank runs, with transfers.
  const Schedule& lowered_schedule() const;
  /// The program this rank runs.
  const StageProgram& program() const;

  /// The whole micro-batch `micro`'s data column `name` (every row of the micro-batch; the
  /// runtime cuts this rank's block).
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
