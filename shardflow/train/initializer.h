// Parameter initializers by name, as MindSpore's weight_init / bias_init strings.
//
//   normal          N(0, 0.01)                       (MindSpore Normal())
//   zeros, ones
//   uniform         U(-0.07, 0.07)                   (MindSpore Uniform())
//   xavier_uniform  U(±sqrt(6 / (fan_in + fan_out)))
//   he_uniform      U(±sqrt(6 / fan_in))             (a = 0)
//   he_normal       N(0, sqrt(2 / fan_in))
//   dense_weight    HeUniform(a = sqrt 5) = U(±1 / sqrt(fan_in))   Dense's default, as PyTorch
//   dense_bias      U(±1 / sqrt(fan_in)), fan_in given as the attribute of the weight
//
// Values come from the counter-based RNG at each element's global index, so a shard is
// generated exactly as the same slice of the full tensor.
#pragma once

#include <cstdint>
#include <string>

#include <shardflow/core/rng.h>
#include <shardflow/core/tensor.h>

namespace sf {

// Throws NotFound naming the initializer and the known ones.
void check_initializer(const std::string& init);

// `init` may carry a fan-in override after a colon ("dense_bias:784"). For a weight of
// shape (out, in, ...) fan_in = in * receptive field, fan_out = out * receptive field.
void initialize(Tensor& t, const std::string& init, uint64_t seed, const std::string& name,
                const ShardRegion& region = {});

}  // namespace sf
