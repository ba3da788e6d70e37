#include "parallel/auto_parallel.h"

#include "core/error.h"
#include "parallel/propagation/sharding_propagation.h"

namespace sf {

StrategySearch search_strategies(const Graph& g, const std::vector<int>& outputs, const StrategyTable& given,
                                 int64_t devices, const AutoParallelContext& context) {
  if (context.search_mode == "sharding_propagation")
    return propagate_strategies(g, outputs, given, devices, context.dataset_strategy);
  SF_THROW(InvalidArgument, "auto parallel: search_mode '{}' is not supported", context.search_mode);
}

}  // namespace sf
