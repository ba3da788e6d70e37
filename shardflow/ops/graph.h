/// @file
/// The graph IR: a list of single-output nodes in topological order.
///
/// Node ids are positions in the list; a node's inputs always have smaller ids, so id order
/// is an execution order. Adding a node resolves its op in the registry and runs shape
/// inference at once, so a bad graph is refused while it is built, with an error naming
/// the node and the rule broken. Nodes live in a deque: references stay valid as it grows.
/// Not thread-safe while being built; read-only use from many threads is fine.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <shardflow/core/dtype.h>
#include <shardflow/core/shape.h>
#include <shardflow/ops/attrs.h>

namespace sf {

struct OpDef;

/// One node of a Graph: an op applied to earlier nodes' outputs, with its inferred output.
struct Node {
  int id = -1;  ///< its position in the graph
  std::string op;           ///< registered op name, e.g. "MatMul"
  std::string name;         ///< unique within the graph, e.g. "fc1/MatMul"
  std::vector<int> inputs;  ///< producer node ids
  Attrs attrs;              ///< the op's attributes, e.g.\ transpose_b
  Shape shape;              ///< inferred output shape
  DType dtype = DType::kF32;    ///< inferred output dtype
  const OpDef* def = nullptr;   ///< the op's registry entry
};

/// The graph IR: single-output nodes in topological order (see the file comment).
class Graph {
 public:
  Graph() = default;  ///< an empty graph
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ///@{
  /// Movable; not copyable.
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  ///@}

  /// Appends a node; an empty name becomes "<op>-<id>". Throws NotFound for an unknown op,
  /// InvalidArgument for a duplicate name or a bad input id, ShapeError from inference.
  int add(const std::string& op, std::vector<int> inputs, Attrs attrs = {}, std::string name = "");

  /// The node with id `id`; InvalidArgument if there is none.
  const Node& node(int id) const;
  /// The number of nodes.
  int size() const { return static_cast<int>(nodes_.size()); }
  /// Every node, in id order.
  const std::deque<Node>& nodes() const { return nodes_; }
  /// Id of the node with this name, or -1.
  int find(const std::string& name) const;
  /// For each node, the ids of the nodes that read it (in id order, one entry per edge).
  std::vector<std::vector<int>> consumers() const;

 private:
  std::deque<Node> nodes_;
};

/// Nodes whose op updates one of its inputs in place (OpDef::inplace_input), in id order: in a
/// forward graph, state such as BatchNorm's moving statistics, which nothing reads and which a
/// program must fetch for the update to happen.
std::vector<int> in_place_nodes(const Graph& g);

/// "MatMul 'fc1/MatMul'" style label used in error messages: op and node name, each brief
/// (core/brief.h), so a huge or multi-line name cannot swamp the message.
std::string node_label(const Node& n);

}  // namespace sf
