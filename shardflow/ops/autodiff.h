/// @file
/// Reverse-mode autodiff on the graph IR: appends the backward graph of a scalar loss.
#pragma once

#include <vector>

#include <shardflow/ops/graph.h>

namespace sf {

/// Appends to `g` the nodes that compute d loss / d wrt[i] and returns their ids, in the order
/// of `wrt`. Only nodes on a path from some wrt to the loss are differentiated, and a rule is
/// asked only for the input gradients that are needed (no dX for the first layer). A wrt the
/// loss does not depend on gets a zero Fill. Throws InvalidArgument if the loss is not a
/// scalar or a needed op has no gradient rule.
std::vector<int> gradients(Graph& g, int loss, const std::vector<int>& wrt);

}  // namespace sf
