#include <shardflow/core/rng.h>

#include <cmath>
#include <numbers>
#include <string>

#include <shardflow/core/brief.h>

namespace sf {

namespace {
constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

std::array<uint32_t, 4> block(uint64_t seed, uint64_t stream, uint64_t index) {
  return philox4x32({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                     static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                    {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// 24 random bits -> [0, 1), exactly representable in f32.
inline float to_unit(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
}  // namespace

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return c;
}

float uniform_at(uint64_t seed, uint64_t stream, uint64_t index) { return to_unit(block(seed, stream, index)[0]); }

float normal_at(uint64_t seed, uint64_t stream, uint64_t index) {
  auto r = block(seed, stream, index);
  // Box-Muller on two 32-bit uniforms; u1 in (0, 1] so log() is finite.
  double u1 = (static_cast<double>(r[0]) + 1.0) / 4294967296.0;
  double u2 = static_cast<double>(r[1]) / 4294967296.0;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

void fill_random(Tensor& out, Distribution dist, float a, float b, uint64_t seed, uint64_t stream,
                 const ShardRegion& region) {
  float* p = out.f32();
  const Shape& shape = out.shape();
  const int r = out.rank();
  Shape full = region.full_shape.empty() && region.offset.empty() ? shape : region.full_shape;
  std::vector<int64_t> offset = region.offset.empty() ? std::vector<int64_t>(r, 0) : region.offset;
  SF_ENFORCE(static_cast<int>(full.size()) == r && static_cast<int>(offset.size()) == r, ShapeError,
             "fill_random: shard {} does not match full shape {}", out.describe(), brief_shape(full));
  for (int d = 0; d < r; ++d)
    SF_ENFORCE(offset[d] >= 0 && offset[d] + shape[d] <= full[d], ShapeError,
               "fill_random: shard {} at offset {} exceeds full shape {} in dim {}", out.describe(), offset[d],
               brief_shape(full), d);
  const auto gstride = strides_of(full);
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < out.numel(); ++i) {
    uint64_t g = 0;
    for (int d = 0; d < r; ++d) g += static_cast<uint64_t>((idx[d] + offset[d]) * gstride[d]);
    float u = dist == Distribution::kUniform ? uniform_at(seed, stream, g) : normal_at(seed, stream, g);
    p[i] = a + b * u;
    for (int d = r - 1; d >= 0; --d) {  // odometer increment of the local index
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

uint64_t stream_of(const std::string& name) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64-bit offset basis
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace sf
