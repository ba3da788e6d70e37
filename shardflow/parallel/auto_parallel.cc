#include <shardflow/parallel/auto_parallel.h>

#include <shardflow/core/error.h>
#include <shardflow/parallel/auto_search.h>
#include <shardflow/parallel/propagation/sharding_propagation.h>

namespace sf {

StrategySearch search_strategies(const Graph& g, const std::vector<int>& outputs, const StrategyTable& given,
                                 int64_t devices, const AutoParallelContext& context) {
  if (context.search_mode == "sharding_propagation")
    return propagate_strategies(g, outputs, given, devices, context.dataset_strategy);
  if (context.search_mode == "dynamic_programming") {
    AutoSearchOptions options;
    options.dataset_strategy = context.dataset_strategy;
    return search_auto(g, outputs, given, devices, options);
  }
  SF_THROW(InvalidArgument, "auto parallel: search_mode '{}' is not supported", context.search_mode);
}

}  // namespace sf
