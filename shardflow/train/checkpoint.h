/// @file
/// Checkpoints: named tensors in one file (grammar in docs/checkpoint_format.md), written
/// atomically (temporary file, fsync, rename) so a crash never leaves a torn checkpoint.
/// Loading restores the tensors bitwise.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/train/optimizer.h>

namespace sf {

/// A checkpoint's contents: (name, tensor) pairs, in file order.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// The largest checkpoint file load_checkpoint() reads, 64 GiB (docs/limits.md).
inline constexpr uint64_t kMaxCheckpointBytes = uint64_t{1} << 36;

/// Writes `entries` to `path` atomically. Throws IoError naming the file it cannot write.
void save_checkpoint(const NamedTensors& entries, const std::string& path);
/// Throws IoError naming the file (and the tensor, for a bad one) for a missing, truncated or
/// malformed checkpoint. Limits (docs/limits.md), checked before allocating: the file is at
/// most kMaxCheckpointBytes, each tensor at most kMaxTensorBytes (core/serialize.h).
NamedTensors load_checkpoint(const std::string& path);

/// The optimizer's parameters, its state tensors and "global_step": what a resumed run needs.
NamedTensors checkpoint_entries(nn::Optimizer& optimizer);
/// Copies the loaded values into the optimizer's parameters and state (shapes checked);
/// throws InvalidArgument naming a parameter the checkpoint lacks.
void load_into(nn::Optimizer& optimizer, const NamedTensors& loaded);

}  // namespace sf
