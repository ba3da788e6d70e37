#include <shardflow/train/needs_ranks.h>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>

namespace sf {

void check_parallel_mode_has_ranks(const std::string& who) {
  if (comm::current_rank_or_null()) return;
  const AutoParallelContext ctx = get_auto_parallel_context();
  constexpr const char* kFix = "call sf::comm::init(...) or train inside sf::comm::run_ranks";
  SF_ENFORCE(ctx.parallel_mode == ParallelMode::kStandAlone, InvalidArgument, "{}: parallel_mode {} needs ranks: {}",
             who, parallel_mode_name(ctx.parallel_mode), kFix);
  SF_ENFORCE(ctx.pipeline_stages <= 1, InvalidArgument, "{}: pipeline_stages {} needs ranks: {}", who,
             ctx.pipeline_stages, kFix);
}

}  // namespace sf
