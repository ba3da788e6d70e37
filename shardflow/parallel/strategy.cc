#include <shardflow/parallel/strategy.h>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/device_matrix.h>

namespace sf {

std::string strategy_str(const Strategy& strategy) { return brief_ints(strategy, kMaxDeviceAxes); }

TensorLayout strategy_to_layout(const Strategy& strategy, int64_t device_count, std::string_view what) {
  const std::string spec = "strategy " + strategy_str(strategy);
  SF_ENFORCE(!strategy.empty(), InvalidArgument, "{}: {} is empty; a strategy has one entry per tensor dim", what,
             spec);
  for (size_t i = 0; i < strategy.size(); ++i)
    SF_ENFORCE(strategy[i] >= 1, InvalidArgument, "{}: {} has entry {} = {}; every entry must be at least 1", what,
               spec, i, strategy[i]);
  const int64_t product = device_product(strategy, fmt::format("{}: strategy", what));
  SF_ENFORCE(device_count % product == 0, InvalidArgument,
             "{}: {} uses {} devices, which neither equals nor divides the {} devices of the job", what, spec, product,
             device_count);
  TensorLayout::TensorMap map(strategy.size());
  for (size_t i = 0; i < strategy.size(); ++i) map[i] = {static_cast<int>(i)};
  return TensorLayout(DeviceMatrix(strategy), std::move(map), {}, {}, spec).fit_to(device_count, what);
}

}  // namespace sf
