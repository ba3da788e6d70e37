#include <shardflow/train/clip_grad.h>

#include <cmath>

#include <shardflow/comm/all_reduce.h>
#include <shardflow/core/error.h>

namespace sf::nn {

double global_grad_norm(const std::vector<Tensor>& grads, const GradPlacement& placement) {
  SF_ENFORCE(placement.counted.empty() || placement.counted.size() == grads.size(), InvalidArgument,
             "global_grad_norm: the placement lists {} gradients, {} were given", placement.counted.size(),
             grads.size());
  // Double within the rank: a gradient of millions of f32 squares summed in f32 would lose the
  // small ones, and the ranks' partial sums must agree with one device's to ~1e-7.
  double sum = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!placement.counted.empty() && !placement.counted[i]) continue;
    const float* g = grads[i].f32();
    double s = 0;
    for (int64_t k = 0; k < grads[i].numel(); ++k) s += static_cast<double>(g[k]) * g[k];
    sum += s;
  }
  if (placement.group.defined() && placement.group.size() > 1) {
    // One scalar over the group; every rank gets the same bits (comm/all_reduce.h), so every
    // rank scales by the same factor. The comm layer reduces f32 only: the sum keeps ~7 digits.
    const Tensor total = comm::all_reduce(Tensor::scalar(static_cast<float>(sum)),
                                          {.group = placement.group, .op = comm::ReduceOp::kSum});
    sum = total.item();
  }
  return std::sqrt(sum);
}

// Written as a comparison rather than std::min so that a NaN norm gives a NaN factor (PyTorch's
// clamp keeps NaN), which then reaches the gradients instead of passing them unclipped.
double clip_scale(double norm, float max_norm) {
  const double factor = max_norm / (norm + kClipEps);
  return factor >= 1 ? 1.0 : factor;
}

double clip_by_global_norm(std::vector<Tensor>& grads, float max_norm, const GradPlacement& placement) {
  SF_ENFORCE(max_norm > 0 && std::isfinite(max_norm), InvalidArgument,
             "clip_by_global_norm: max_norm must be positive and finite, got {}", max_norm);
  const double norm = global_grad_norm(grads, placement);
  const double scale = clip_scale(norm, max_norm);
  // Below the threshold nothing is touched, so clipping that never triggers changes no bit.
  if (scale == 1) return norm;
  const auto s = static_cast<float>(scale);
  for (Tensor& t : grads) {
    float* g = t.f32();
    for (int64_t k = 0; k < t.numel(); ++k) g[k] *= s;
  }
  return norm;
}

}  // namespace sf::nn
