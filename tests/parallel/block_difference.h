// Test support: how far a rank's parameter block is from the same block of a whole tensor, for
// semi-auto runs compared with 1 device.
#pragma once

#include <cmath>
#include <vector>

#include <shardflow/train/parameter.h>

namespace sf {

// The largest difference between `p`'s block (a whole tensor when not sharded) and the same
// block of `whole`; NaN when any element is NaN, so a diverged run cannot look equal.
inline float block_difference(const Parameter& p, const Tensor& whole) {
  const Tensor& block = p.value();
  float worst = 0;
  for (int64_t k = 0; k < block.numel(); ++k) {
    int64_t rest = k, flat = 0, stride = 1;
    std::vector<int64_t> idx(block.rank());
    for (int d = block.rank() - 1; d >= 0; --d) {
      idx[d] = rest % block.dim(d) + (p.sharded() ? p.offset()[d] : 0);
      rest /= block.dim(d);
    }
    for (int d = block.rank() - 1; d >= 0; --d) {
      flat += idx[d] * stride;
      stride *= whole.dim(d);
    }
    const float diff = std::abs(block.f32()[k] - whole.f32()[flat]);
    if (!(diff <= worst)) worst = diff;
  }
  return worst;
}

}  // namespace sf
