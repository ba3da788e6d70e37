/// @file
/// What a PipelineCell's training step is made of, before any rank starts: the network of one
/// micro-batch cut into its virtual stages (pipeline/stage_split.h), the strategies each stage's
/// ops run with — shard() / Layout, a strategy file's entries over them, and in auto parallel
/// mode the strategy search run on each stage over the stage's devices — and, for `--dry-run N`,
/// every stage's program planned as its first rank would build it (pipeline/stage_program.h)
/// with what a step costs that rank: parameter and activation bytes, the micro-batches it
/// stashes at once, the bytes its collectives and its stage-to-stage transfers move.
///
/// PipelineStep builds its stages and strategies with the same functions, so the plan is the
/// one training runs. Ranks of one stage hold blocks of one size, so the first rank's figures
/// are the stage's.
///
/// Threading: pure functions of their arguments; the cell is only built, not trained.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <shardflow/parallel/context.h>
#include <shardflow/parallel/propagation/strategy_search.h>
#include <shardflow/parallel/sharding/graph_sharding.h>
#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/stage_split.h>
#include <shardflow/train/pipeline_cell.h>

namespace sf {

/// The schedule of the context's pipeline_stages, pipeline_scheduler and pipeline_interleave for
/// `micro_size` micro-batches on `devices` ranks. Throws InvalidArgument, naming the rule, when the
/// stages do not divide the devices, micro_size is below the stages, or interleave is asked of a
/// schedule without chunks (and as make_schedule does).
pipeline::Schedule pipeline_schedule(const AutoParallelContext& context, int64_t devices, int micro_size);

/// The network of `cell` (its WithLossCell) on one micro-batch whose columns have these global
/// shapes and dtypes (data, label), cut into `virtual_stages` stage graphs by the cells'
/// pipeline_stage. Throws InvalidArgument as split_stages does.
std::shared_ptr<const std::vector<pipeline::StageGraph>> split_pipeline_cell(nn::PipelineCell& cell,
                                                                             const std::vector<Shape>& micro_shapes,
                                                                             const std::vector<DType>& dtypes,
                                                                             int virtual_stages);

/// The strategies a pipeline's stages run with.
struct StageStrategies {
  StrategyTable given;  ///< shard() / Layout strategies, a strategy file's entries over them
  StrategyTable table;  ///< what the stages run with: `given`, or in auto parallel the searches'
  std::vector<StrategySearch> searches;  ///< auto parallel: one per virtual stage (else empty)
};

/// `given`: the network's strategies; the context's strategy_ckpt_load_file's entries replace
/// those of the same op. In auto parallel mode the context's search runs on each stage graph
/// over `per_stage` devices, from the given strategies. Throws IoError / InvalidArgument for a
/// bad strategy file, InvalidArgument for a strategy that does not fit its stage.
StageStrategies stage_strategies(const std::vector<pipeline::StageGraph>& stages, StrategyTable given,
                                 const AutoParallelContext& context, int per_stage);

/// Every op's strategy in sharded stage graphs (`shardings` by virtual stage), defaults included,
/// keyed by node name: what the stages run with, to save as a strategy file and load again.
StrategyTable strategies_of(const std::vector<pipeline::StageGraph>& stages,
                            const std::vector<GraphSharding>& shardings);

/// The plan of a pipeline's training step on `devices` ranks (see the file comment).
struct PipelinePlan {
  /// What one rank of a stage holds and moves per step.
  struct StageFigures {
    int first_rank = 0;              ///< the stage's ranks are first_rank .. first_rank + per_stage - 1
    int local_ops = 0;               ///< nodes of the rank's program (all its chunks, with backward)
    double parameter_bytes = 0;      ///< its parameter blocks
    double activation_bytes = 0;     ///< one micro-batch's local results (forward), all chunks
    int peak_in_flight = 0;          ///< micro-batches between their forward and last backward at once
    double collective_bytes = 0;     ///< sent per step by the collectives inside the stage
    double gradient_bytes = 0;       ///< of which the gradients' AllReduce over their replicas
    double transfer_bytes = 0;       ///< sent per step to the neighbouring stages
  };
  int64_t devices = 1;     ///< ranks
  int stages = 1;          ///< pipeline stages
  int per_stage = 1;       ///< ranks per stage
  int chunks = 1;          ///< virtual stages per stage
  int micro_batches = 1;   ///< per step
  std::string schedule;    ///< its name
  std::shared_ptr<const std::vector<pipeline::StageGraph>> stage_graphs;  ///< by virtual stage
  StageStrategies strategies;          ///< what the stages run with
  std::vector<GraphSharding> shardings;  ///< every virtual stage's, by virtual stage
  std::vector<StageFigures> figures;   ///< by stage
  double seconds = 0;                  ///< planning time

  /// Every op's strategy, defaults included (strategies_of the stages).
  StrategyTable used() const { return strategies_of(*stage_graphs, shardings); }
  /// With `explain`: each op's strategy and where it came from (the searches' explanation in auto
  /// parallel); then per stage its ranks and figures, and each op's strategy.
  std::string str(bool explain, const std::string& given_by = "shard()") const;
};

/// Plans the step of `cell` on batches with these global `batch_shapes` and `dtypes` over
/// `devices` ranks, under the context's pipeline_stages, pipeline_scheduler, pipeline_interleave,
/// parallel and search modes and strategy file. Nothing communicates. Throws InvalidArgument,
/// naming the rule, for a configuration PipelineStep would refuse (devices not a multiple of the
/// stages, micro-batches that do not divide the batch, a strategy that does not fit its stage).
PipelinePlan plan_pipeline(nn::PipelineCell& cell, const std::vector<Shape>& batch_shapes,
                           const std::vector<DType>& dtypes, int64_t devices, const AutoParallelContext& context);

}  // namespace sf
