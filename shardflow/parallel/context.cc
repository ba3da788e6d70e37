#include <shardflow/parallel/context.h>

#include <mutex>

#include <shardflow/core/error.h>

namespace sf {

namespace {
std::mutex g_mu;
AutoParallelContext g_context;
}  // namespace

void set_auto_parallel_context(const AutoParallelContext& context) {
  SF_ENFORCE(context.bucket_bytes >= 0, InvalidArgument,
             "set_auto_parallel_context: bucket_bytes must be >= 0 (0 = one bucket per gradient), got {}",
             context.bucket_bytes);
  SF_ENFORCE(context.search_mode == "sharding_propagation" || context.search_mode == "dynamic_programming",
             InvalidArgument,
             "set_auto_parallel_context: search_mode '{}' is not supported (sharding_propagation and "
             "dynamic_programming are)",
             context.search_mode);
  SF_ENFORCE(context.dataset_strategy == "data_parallel" || context.dataset_strategy == "full_batch", InvalidArgument,
             "set_auto_parallel_context: dataset_strategy '{}' is neither 'data_parallel' nor 'full_batch'",
             context.dataset_strategy);
  SF_ENFORCE(!context.save_graphs || !context.save_graphs_path.empty(), InvalidArgument,
             "set_auto_parallel_context: save_graphs needs a save_graphs_path");
  SF_ENFORCE(context.pipeline_stages >= 1, InvalidArgument,
             "set_auto_parallel_context: pipeline_stages must be >= 1, got {}", context.pipeline_stages);
  SF_ENFORCE(context.pipeline_interleave >= 1, InvalidArgument,
             "set_auto_parallel_context: pipeline_interleave must be >= 1, got {}", context.pipeline_interleave);
  SF_ENFORCE(context.pipeline_scheduler == "1f1b" || context.pipeline_scheduler == "gpipe" ||
                 context.pipeline_scheduler == "interleaved_1f1b" || context.pipeline_scheduler == "zb_h1",
             InvalidArgument,
             "set_auto_parallel_context: pipeline_scheduler '{}' is not one of 1f1b, gpipe, interleaved_1f1b, zb_h1",
             context.pipeline_scheduler);
  std::lock_guard<std::mutex> lock(g_mu);
  g_context = context;
}

AutoParallelContext get_auto_parallel_context() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_context;
}

void reset_auto_parallel_context() { set_auto_parallel_context({}); }

std::string_view parallel_mode_name(ParallelMode mode) {
  switch (mode) {
    case ParallelMode::kStandAlone: return "stand_alone";
    case ParallelMode::kDataParallel: return "data_parallel";
    case ParallelMode::kHybridParallel: return "hybrid_parallel";
    case ParallelMode::kSemiAutoParallel: return "semi_auto_parallel";
    case ParallelMode::kAutoParallel: return "auto_parallel";
  }
  return "unknown";
}

bool reduces_gradients(ParallelMode mode) {
  return mode == ParallelMode::kDataParallel || mode == ParallelMode::kHybridParallel;
}

}  // namespace sf
