/// @file
/// The rule that a parallel mode needs ranks: data_parallel, hybrid_parallel, semi_auto_parallel,
/// auto_parallel and pipeline_stages > 1 (parallel/context.h) spread a step over the ranks of a
/// job, so set with no rank on the calling thread they would silently train as one device.
/// Model and the functional path (value_and_grad, DistributedGradReducer) refuse it instead,
/// before any step. A job of one rank (sf::comm::init with one device, sfrun -n 1) is valid.
///
/// Threading: reads the calling thread's rank and the (thread-safe) parallel context.
#pragma once

#include <string>

namespace sf {

/// Throws InvalidArgument "<who>: parallel_mode data_parallel needs ranks: call
/// sf::comm::init(...) or train inside sf::comm::run_ranks" when the parallel context asks for a
/// parallel mode (or pipeline_stages > 1) and the calling thread has no rank.
void check_parallel_mode_has_ranks(const std::string& who);

}  // namespace sf
