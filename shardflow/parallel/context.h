/// @file
/// The parallel context: MindSpore's set_auto_parallel_context / get_auto_parallel_context,
/// the process-wide choice of how a training step is spread over the ranks of a job.
///
/// @code
///   sf::set_auto_parallel_context({.parallel_mode = sf::ParallelMode::kDataParallel,
///                                  .gradients_mean = true});
/// @endcode
///
/// Set it once, before networks and models are built (Model reads it when it is constructed,
/// as MindSpore's TrainOneStepCell does). The modes:
/// @verbatim
///   kStandAlone      one device, or collectives the program calls itself with no gradient
///                    reduction (every rank steps on its own gradients);
///   kDataParallel    every rank holds all parameters and its own shard of the data; the
///                    gradients are AllReduced (and divided by the number of ranks when
///                    gradients_mean) before the optimizer uses them;
///   kHybridParallel  manual parallel: the program slices data or model and calls collectives
///                    itself, and the gradients of the (replicated) parameters are reduced as
///                    in kDataParallel (MindSpore's TrainOneStepCell reduces them in exactly
///                    these two modes);
///   kSemiAutoParallel  operator-level sharding by the strategies of shard() (train/semi_auto_step.h);
///   kAutoParallel      the strategies of the ops shard() left open are found by `search_mode`
///                      (parallel/auto_parallel.h), then the step runs as in kSemiAutoParallel:
///                      "sharding_propagation" spreads the given strategies along the graph's
///                      edges; "dynamic_programming" searches a cost model (communication and
///                      memory). MindSpore's third mode, "recursive_programming", is refused.
/// @endverbatim
/// dataset_strategy says how the input batch reaches the ranks, which the search prices:
/// "data_parallel" (MindSpore's default) has it arrive split along the batch dim over every
/// device, "full_batch" has every rank hold the whole of it.
/// strategy_ckpt_save_file / strategy_ckpt_load_file (MindSpore's strategy checkpoint; "" for
/// none; format: parallel/strategy_file.h): when the semi-auto or auto step is built, it writes
/// every op's strategy, defaults included, to the save file (rank 0), and takes the load file's
/// strategies over every in-code shard() call; a bad load file is refused there, naming it, before
/// any rank communicates.
/// save_graphs / save_graphs_path (MindSpore's set_context(save_graphs=True,
/// save_graphs_path=...)): when the semi-auto or auto step is built, each rank writes its parallel
/// IR under `<save_graphs_path>/rank_<r>/` (train/save_graphs.h, docs/ir_dump.md), no callback needed.
/// pipeline_stages (MindSpore's pipeline_stages): the number of pipeline stages the devices are
/// split into; 1 (the default) is no pipeline. A PipelineCell (train/pipeline_cell.h) runs its
/// network's stages on devices / pipeline_stages data-parallel replicas each, with the schedule
/// pipeline_scheduler ("1f1b", MindSpore's default, "gpipe", "interleaved_1f1b" or "zb_h1",
/// pipeline/schedule.h) over pipeline_interleave model chunks per device (v; >= 2 only for
/// "interleaved_1f1b", whose cells then number their stages 0 .. stages·v - 1).
/// bucket_bytes is the size at which a gradient bucket closes (MindSpore's comm_fusion
/// "allreduce" size, PyTorch DDP's bucket_cap_mb): gradients are reduced in buckets of about
/// that many bytes, each AllReduced as soon as its last gradient is computed.
///
/// Knows nothing of ranks or transports: the number of devices comes from the job
/// (comm::get_group_size), not from here.
/// Threading: set/get/reset are thread-safe (a mutex); virtual ranks of one process share the
/// one context, as every process of a MindSpore job sets the same one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sf {

/// How a training step is spread over the ranks of a job (the modes are described above).
enum class ParallelMode { kStandAlone, kDataParallel, kHybridParallel, kSemiAutoParallel, kAutoParallel };

/// The default AutoParallelContext::bucket_bytes, 1 MiB (see docs/benchmarks.md).
inline constexpr int64_t kDefaultBucketBytes = int64_t{1} << 20;

/// The process-wide parallel context (MindSpore's auto parallel context); the file's
/// documentation describes each field.
struct AutoParallelContext {
  ParallelMode parallel_mode = ParallelMode::kStandAlone;  ///< how a step is spread over the ranks
  bool gradients_mean = false;                 ///< divide reduced gradients by the number of ranks
  int64_t bucket_bytes = kDefaultBucketBytes;  ///< the size at which a gradient bucket closes
  std::string search_mode = "dynamic_programming";  ///< kAutoParallel only
  std::string dataset_strategy = "data_parallel";   ///< or "full_batch"
  /// Where the semi-auto or auto step writes every op's strategy; "" for none.
  std::string strategy_ckpt_save_file{};  // {}: designated initializers may leave these out
  /// The strategy file whose strategies override shard() calls; "" for none.
  std::string strategy_ckpt_load_file{};
  bool save_graphs = false;                      ///< write each rank's parallel IR
  std::string save_graphs_path = "saved_graph";  ///< where save_graphs writes
  int pipeline_stages = 1;                  ///< pipeline stages the devices are split into
  std::string pipeline_scheduler = "1f1b";  ///< the pipeline schedule's name
  int pipeline_interleave = 1;              ///< model chunks per device (v)
};

/// Throws InvalidArgument for a negative bucket_bytes, an unknown search_mode or
/// dataset_strategy.
void set_auto_parallel_context(const AutoParallelContext& context);
/// The context set last (the defaults if none was).
AutoParallelContext get_auto_parallel_context();
/// Back to the defaults (MindSpore's reset_auto_parallel_context).
void reset_auto_parallel_context();

/// MindSpore's names: "stand_alone", "data_parallel", "hybrid_parallel", "semi_auto_parallel",
/// "auto_parallel".
std::string_view parallel_mode_name(ParallelMode mode);
/// True for the modes whose training step reduces the gradients of replicated parameters.
bool reduces_gradients(ParallelMode mode);

}  // namespace sf
