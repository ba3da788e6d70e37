/// @file
/// Counter-based random numbers (Philox4x32-10) addressed by global element index.
///
/// The value of element i of a parameter depends only on (seed, stream, i), never on the
/// order of generation, so any shard of a parameter is generated identically to the same
/// slice of the full tensor: a rank never needs the full tensor to initialise its part.
/// Stateless and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf {

/// Philox4x32 with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

///@{
/// Uniform in [0, 1) and standard normal values for element `index` of stream `stream`.
float uniform_at(uint64_t seed, uint64_t stream, uint64_t index);
float normal_at(uint64_t seed, uint64_t stream, uint64_t index);
///@}

/// The distribution fill_random() draws from.
enum class Distribution { kUniform, kNormal };

/// Where a shard sits inside the full tensor: offset per dim (shard shape is the tensor's).
struct ShardRegion {
  Shape full_shape;             ///< the shape of the whole tensor
  std::vector<int64_t> offset;  ///< empty = the whole tensor
};

/// Fills `out` (f32) with a + b * u where u is uniform [0,1) or standard normal, element by
/// element at the global index of each element inside `region.full_shape`.
void fill_random(Tensor& out, Distribution dist, float a, float b, uint64_t seed, uint64_t stream,
                 const ShardRegion& region = {});

/// A stable 64-bit stream id for a parameter name, so that each parameter gets its own stream.
uint64_t stream_of(const std::string& name);

}  // namespace sf
