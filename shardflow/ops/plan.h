// Helpers shared by every executor of a Graph (the sequential reference and the actor
// runtime): which nodes a set of fetches needs, and checking a tensor bound to a source.
#pragma once

#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

namespace sf {

// Ids (ascending, so in execution order) of the nodes the fetches depend on, fetches included.
std::vector<int> needed_nodes(const Graph& g, const std::vector<int>& fetches);

// Throws InvalidArgument naming the node if `t` does not have the node's shape and dtype.
void check_binding(const Node& n, const Tensor& t);

// A fresh output buffer for node n.
inline Tensor allocate_output(const Node& n) { return Tensor(n.shape, n.dtype); }

}  // namespace sf
