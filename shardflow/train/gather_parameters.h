/// @file
/// gather_parameters: the whole value of every parameter of a semi-auto parallel network, put
/// together from the blocks the ranks hold (Parameter::shard), on every rank — to evaluate or
/// save the trained network as one device would see it.
///
/// @code
///   sf::comm::run_ranks([&] { ...train...; std::vector<sf::Tensor> whole = sf::gather_parameters(params); });
/// @endcode
///
/// A collective over the world group (one AllGather of the blocks and one of their offsets per
/// sharded parameter): every rank must call it with the same parameters in the same order.
/// Unsharded parameters are returned as they are. Replicas of a block hold the same values, so
/// the result is exact, whichever replica is copied.
///
/// Threading: on a thread bound to a rank (comm/rank_context.h).
#pragma once

#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/train/parameter.h>

namespace sf {

/// The whole value of each of `params`, in order, on every rank.
std::vector<Tensor> gather_parameters(const ParameterList& params);

}  // namespace sf
