/// @file
/// What every collective graph op (AllReduce, AllGather, ReduceScatter, Broadcast, AlltoAll,
/// NeighborExchange, NeighborExchangeV2(+Grad), Send, Receive) shares: the group it runs on
/// and the readers of its list-valued attributes.
///
/// The graph knows a group by name and size only. ops/ must not know comm, yet shape inference
/// needs the size (AllGather's output is size times its input), so every collective node
/// carries "group" (the name; the actor runtime resolves it through its CollectiveContext,
/// actors/collective_context.h) and "group_size", which the runtime checks against the real
/// group before anything runs. Collective ops have no kernel here: their forward refuses, with
/// an error naming the node, so the sequential Executor rejects a graph that holds one; the
/// actor runtime sends them to the group's collective actor instead.
///
/// Threading: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

namespace sf {

/// A communication group as the graph sees it. Rank ids in attributes are group ranks.
struct GroupRef {
  std::string name;  ///< the group's name
  int64_t size = 1;  ///< the number of ranks in it
};

/// True for the ops listed above.
bool is_collective(const Node& n);

/// The node's "group" and "group_size"; throws InvalidArgument naming the node if the name is
/// empty or the size below 1. Shape inference calls it first, so a built node always has both.
GroupRef group_of(const Node& n);

/// Lists of shapes (NeighborExchange's send_shapes/recv_shapes) as one int list attribute:
/// each shape is its rank followed by its dims, so ((2, 3), (4,)) is (2, 2, 3, 1, 4).
std::vector<int64_t> encode_shapes(const std::vector<Shape>& shapes);
/// Throws InvalidArgument naming the node and key if the list is not such an encoding.
std::vector<Shape> decode_shapes(const Node& n, const std::string& key);

/// A dtype attribute ("f32" or "i32"); throws InvalidArgument naming the node otherwise.
DType dtype_attr(const Node& n, const std::string& key, DType def = DType::kF32);

/// The forward of every collective op: throws InvalidArgument naming the node and its group.
void refuse_outside_runtime(const Node& n, const std::vector<Tensor>& inputs, Tensor& out);

}  // namespace sf
