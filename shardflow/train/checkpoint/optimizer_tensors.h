/// @file
/// A network's training tensors on this rank as a distributed checkpoint sees them: the
/// optimizer's parameters (each the block this rank holds — whole in stand-alone and data
/// parallel modes, Parameter::offset()'s block under semi-auto parallel), its state tensors
/// (moments, Adam's moment1/moment2: the block of their parameter) and "global_step". Saving
/// passes them to save_checkpoint_dir; loading fills them from a CheckpointReader, resharded to
/// the layouts they have now, whatever the saving job's layouts and rank count were.
///
/// @code
///   // every rank, after a step:
///   sf::ckpt::save_checkpoint_dir("run", sf::ckpt::optimizer_tensors(opt), {.step = 30, .keep = 3});
///   // every rank of a new job (any rank count), with the parameters already sharded:
///   sf::ckpt::CheckpointReader ckpt("run");
///   sf::ckpt::load_optimizer_tensors(ckpt, opt);
/// @endcode
///
/// Under semi-auto parallel a parameter is cut to its block when its step program is built
/// (train/semi_auto_step.h); load after that, or every rank would read the whole tensor.
///
/// Threading: the calling rank's thread.
#pragma once

#include <vector>

#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/sharded_tensor.h>
#include <shardflow/train/optimizer.h>

namespace sf::ckpt {

/// The optimizer's parameters, state tensors and "global_step" (i32 scalar) on this rank. The
/// tensors share the optimizer's storage: save them before the next step changes them.
std::vector<ShardedTensor> optimizer_tensors(nn::Optimizer& optimizer);

/// The parameter of `params` an optimizer state tensor named `state_name` belongs to (the
/// optimizers name it "<kind>.<parameter name>"); null for any other name.
const Parameter* owner_of(const std::string& state_name, const ParameterList& params);

/// `value` named `name` as this rank holds it: a parameter of `params` (by name) or an
/// optimizer state tensor of one ("<kind>.<parameter name>", of its shape) is that parameter's
/// block; anything else is held whole. optimizer_tensors() describes each of its tensors so.
ShardedTensor parameter_block(const std::string& name, const Tensor& value, const ParameterList& params);

/// Loads every tensor optimizer_tensors() lists from `ckpt` into the optimizer, resharded to
/// this rank's blocks, and sets its global step; all or nothing. Throws (before changing
/// anything) InvalidArgument listing the tensors the checkpoint lacks or holds with another
/// shape (tensors it holds beyond them, another component's state, are left for their owner),
/// and IoError for a file that fails.
void load_optimizer_tensors(CheckpointReader& ckpt, nn::Optimizer& optimizer);

}  // namespace sf::ckpt
