#include <shardflow/train/initializer.h>

#include <cmath>
#include <fmt/format.h>

#include <shardflow/core/error.h>

namespace sf {

namespace {
constexpr const char* kKnown = "normal, zeros, ones, uniform, xavier_uniform, he_uniform, he_normal, dense_weight, dense_bias";

struct Spec {
  std::string kind;
  int64_t fan_in_override = 0;
};

Spec parse(const std::string& init) {
  Spec s;
  auto colon = init.find(':');
  s.kind = init.substr(0, colon);
  if (colon != std::string::npos) {
    try {
      s.fan_in_override = std::stoll(init.substr(colon + 1));
    } catch (const std::exception&) {
      SF_THROW(InvalidArgument, "initializer '{}': fan-in after ':' is not a number", init);
    }
  }
  return s;
}
}  // namespace

void check_initializer(const std::string& init) {
  static const char* names[] = {"normal", "zeros", "ones", "uniform", "xavier_uniform",
                                "he_uniform", "he_normal", "dense_weight", "dense_bias"};
  const std::string kind = parse(init).kind;
  for (const char* n : names)
    if (kind == n) return;
  SF_THROW(NotFound, "unknown initializer '{}' (known: {})", init, kKnown);
}

void initialize(Tensor& t, const std::string& init, uint64_t seed, const std::string& name,
                const ShardRegion& region) {
  check_initializer(init);
  const Spec spec = parse(init);
  const Shape& full = region.full_shape.empty() ? t.shape() : region.full_shape;
  int64_t receptive = 1;
  for (size_t i = 2; i < full.size(); ++i) receptive *= full[i];
  int64_t fan_in = full.size() >= 2 ? full[1] * receptive : (full.empty() ? 1 : full[0]);
  int64_t fan_out = full.empty() ? 1 : full[0] * receptive;
  if (spec.fan_in_override > 0) fan_in = spec.fan_in_override;
  const uint64_t stream = stream_of(name);
  auto uniform = [&](double bound) {
    fill_random(t, Distribution::kUniform, static_cast<float>(-bound), static_cast<float>(2 * bound), seed, stream,
                region);
  };
  auto normal = [&](double sigma) {
    fill_random(t, Distribution::kNormal, 0.0f, static_cast<float>(sigma), seed, stream, region);
  };
  const std::string& k = spec.kind;
  if (k == "zeros") t.fill(0.0f);
  else if (k == "ones") t.fill(1.0f);
  else if (k == "normal") normal(0.01);
  else if (k == "uniform") uniform(0.07);
  else if (k == "xavier_uniform") uniform(std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)));
  else if (k == "he_uniform") uniform(std::sqrt(6.0 / static_cast<double>(fan_in)));
  else if (k == "he_normal") normal(std::sqrt(2.0 / static_cast<double>(fan_in)));
  else if (k == "dense_weight" || k == "dense_bias") uniform(1.0 / std::sqrt(static_cast<double>(fan_in)));
}

}  // namespace sf
