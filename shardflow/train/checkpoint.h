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
/// Copies the loaded values into the optimizer's parameters and state (shapes checked), all or
/// nothing: throws InvalidArgument naming a parameter the checkpoint lacks, `source` and what it
/// holds ("checkpoint 'run/net-1_5.ckpt' has no tensor 'fc1_weight' (it holds 9 tensors:
/// w, b, ...)"), and ShapeError for a mis-shaped one. `source` names where `loaded` came from.
void load_into(nn::Optimizer& optimizer, const NamedTensors& loaded, const std::string& source = "the checkpoint");
/// load_into from the checkpoint file `ckpt_path`, its messages naming the file.
void load_into(nn::Optimizer& optimizer, const std::string& ckpt_path);

/// How a checkpoint's contents read in a message: "3 tensors: fc1_weight, fc1_bias, global_step"
/// (names cut to a few, brief.h).
std::string brief_contents(const NamedTensors& tensors);

}  // namespace sf
