// Checkpoints: named tensors in one file (grammar in docs/checkpoint_format.md), written
// atomically (temporary file, fsync, rename) so a crash never leaves a torn checkpoint.
// Loading restores the tensors bitwise.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "train/optimizer.h"

namespace sf {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

void save_checkpoint(const NamedTensors& entries, const std::string& path);
// Throws IoError naming the file for a missing, truncated or malformed checkpoint.
NamedTensors load_checkpoint(const std::string& path);

// The optimizer's parameters, its state tensors and "global_step": what a resumed run needs.
NamedTensors checkpoint_entries(nn::Optimizer& optimizer);
// Copies the loaded values into the optimizer's parameters and state (shapes checked);
// throws InvalidArgument naming a parameter the checkpoint lacks.
void load_into(nn::Optimizer& optimizer, const NamedTensors& loaded);

}  // namespace sf
