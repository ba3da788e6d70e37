/// @file
/// PipelineStep: the training step of a PipelineCell (train/pipeline_cell.h) on the calling
/// rank — what Model::train runs in pipeline parallel. It checks the configuration when built
/// (stages × replicas = devices, micro_size >= stages, the optimizer holding exactly the
/// trainable parameters this rank's stages read), and each batch (rows divisible into
/// micro_size micro-batches) before any rank communicates. For a batch shape it builds the
/// network's graph of one micro-batch once, splits it into stages (pipeline/stage_split.h) and
/// runs it on a pipeline::StageRuntime, which cuts each stage's ops over the stage's devices by
/// the network's strategies (shard(), the context's strategy_ckpt_load_file; data parallel for
/// ops without one; in auto parallel mode, the search's per stage: train/pipeline_plan.h); after
/// each step the optimizer updates this rank's parameters (its blocks). When built, rank 0 saves
/// the strategies used to the context's strategy_ckpt_save_file, and with the context's
/// save_graphs every rank writes its parallel IR.
///
/// Threading: on the rank's thread.
#pragma once

#include <memory>
#include <vector>

#include <shardflow/parallel/context.h>
#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/stage_runtime.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/pipeline_cell.h>
#include <shardflow/train/pipeline_plan.h>

namespace sf {

/// The training step of a PipelineCell on the calling rank (see the file comment).
class PipelineStep {
 public:
  /// `devices`: the job's rank count.
  PipelineStep(nn::PipelineCell& cell, std::shared_ptr<nn::Optimizer> optimizer, const AutoParallelContext& context,
               int devices, bool record_timeline = false);
  /// One step on a batch (data, label); returns the loss (sum over micro-batches).
  float step(const std::vector<Tensor>& batch);

  /// Builds the step for batches of this batch's shape without taking one (Model::prepare):
  /// the stages are split and this rank's parameters known. A collective, as step() is.
  void prepare(const std::vector<Tensor>& batch);

  /// Gives every rank the current value of each of `params`, from the first stage that reads it
  /// (a collective: all ranks call it with the same list), so that any rank can run the whole
  /// network: a parameter whole on that stage is broadcast into the network's own; one its stage
  /// cuts over its devices is gathered into a new Parameter of the same name (the network's keeps
  /// its block, which training goes on updating). Returns the parameters to evaluate with, in
  /// order. Needs a step to have run.
  ParameterList share_parameters(const ParameterList& params);

  /// The schedule every rank runs.
  const pipeline::Schedule& schedule() const { return schedule_; }
  /// The runtime of the last batch shape (null before the first step).
  pipeline::StageRuntime* runtime() { return runtime_.get(); }
  /// The last step's result on this rank.
  const pipeline::StepResult& last() const { return last_; }
  /// The number of pipeline stages.
  int stages() const { return stages_; }
  /// The devices of each stage (its data-parallel replicas when no op is cut otherwise).
  int replicas() const { return per_stage_; }
  /// The strategies the stages run with (auto parallel: the searches' too); empty before a step.
  const StageStrategies& strategies() const { return strategies_; }
  /// Every op's strategy the stages run with, defaults included (what a strategy file saves).
  /// Needs a step to have been built.
  StrategyTable used_strategies() const;
  /// Writes this rank's parallel IR under `<path>/rank_<r>/` (train/save_graphs.h); returns the
  /// files. Needs a step to have been built.
  std::vector<std::string> save_graphs(const std::string& path) const;

 private:
  void build_agreed(const std::vector<Tensor>& batch);
  void build(const std::vector<Tensor>& batch);

  nn::PipelineCell& cell_;
  std::shared_ptr<nn::Optimizer> optimizer_;
  AutoParallelContext context_;
  int stages_, chunks_, per_stage_, micro_;
  bool record_;
  pipeline::Schedule schedule_;
  Shape built_for_;
  std::shared_ptr<const std::vector<pipeline::StageGraph>> stage_graphs_;
  StageStrategies strategies_;
  std::unique_ptr<pipeline::StageRuntime> runtime_;
  std::vector<int> grad_index_;  ///< per optimizer parameter: its index in the runtime's names
  pipeline::StepResult last_;
};

}  // namespace sf
