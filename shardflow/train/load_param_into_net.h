/// @file
/// load_param_into_net: MindSpore's mindspore.load_param_into_net — puts a checkpoint's tensors
/// into a network's parameters by name, without an optimizer (for evaluation, fine-tuning, or a
/// network built to read another run's weights). Every parameter of the network counts,
/// trainable or not (BatchNorm's moving statistics), as Cell::get_parameters lists them.
///
///   sf::LoadReport r = sf::load_param_into_net(net, "ckpt/checkpoint-1_1875.ckpt");
///   // r.ckpt_not_load: the optimizer state the file also holds ("moments.fc1_weight", ...)
///
/// All or nothing: the checks come first, and a refused load changes no parameter. Messages
/// name the file (or the `source` given) and the offending tensors, a long list cut (brief.h).
///
/// Threading: call it on the thread of the rank that owns the network; it copies into the
/// parameters' storage, so no step of that network may run at the same time.
#pragma once

#include <string>
#include <vector>

#include <shardflow/train/cell.h>
#include <shardflow/train/checkpoint.h>

namespace sf {

/// What load_param_into_net left out (MindSpore's (param_not_load, ckpt_not_load)).
struct LoadReport {
  std::vector<std::string> param_not_load;  ///< the network's parameters the checkpoint lacks (strict = false)
  std::vector<std::string> ckpt_not_load;   ///< the checkpoint's tensors that name no parameter
};

/// Loads `tensors` into `net`'s parameters by name. A tensor whose shape or dtype differs from
/// its parameter's is refused (ShapeError naming each, e.g. "fc1_weight: checkpoint f32(4, 8),
/// network f32(4, 16)"); with `strict`, so is a parameter the tensors lack (InvalidArgument
/// naming the missing parameters and what `source` holds), else it keeps its value and is
/// listed in param_not_load. Extra tensors (optimizer state, "global_step") are never an error.
/// `source` names where the tensors came from in messages.
LoadReport load_param_into_net(nn::Cell& net, const NamedTensors& tensors, bool strict = true,
                               const std::string& source = "the checkpoint");
/// The same from the checkpoint file `ckpt_path` (load_checkpoint), messages naming the file.
LoadReport load_param_into_net(nn::Cell& net, const std::string& ckpt_path, bool strict = true);

}  // namespace sf
