#include <shardflow/ops/graph.h>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/op_def.h>

namespace sf {

std::string node_label(const Node& n) { return fmt::format("{} '{}'", brief_text(n.op, 40), brief_text(n.name, 80)); }

int Graph::add(const std::string& op, std::vector<int> inputs, Attrs attrs, std::string name) {
  const OpDef& def = OpRegistry::global().find(op);
  const int id = size();
  if (name.empty()) name = fmt::format("{}-{}", op, id);
  SF_ENFORCE(find(name) < 0, InvalidArgument, "{} '{}': a node with this name already exists", op, name);
  SF_ENFORCE(def.arity < 0 ? !inputs.empty() : static_cast<int>(inputs.size()) == def.arity, InvalidArgument,
             "{} '{}': takes {} inputs, got {}", op, name, def.arity < 0 ? "one or more" : std::to_string(def.arity),
             inputs.size());
  std::vector<const Node*> in;
  for (int i : inputs) {
    SF_ENFORCE(i >= 0 && i < id, InvalidArgument, "{} '{}': input id {} does not name an earlier node", op, name, i);
    in.push_back(&nodes_[i]);
  }
  Node n;
  n.id = id;
  n.op = op;
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  n.def = &def;
  TypeInfo t = def.infer(n, in);
  n.shape = std::move(t.shape);
  n.dtype = t.dtype;
  nodes_.push_back(std::move(n));
  return id;
}

const Node& Graph::node(int id) const {
  SF_ENFORCE(id >= 0 && id < size(), InvalidArgument, "node id {} out of range (graph has {})", id, size());
  return nodes_[id];
}

int Graph::find(const std::string& name) const {
  for (const Node& n : nodes_)
    if (n.name == name) return n.id;
  return -1;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> out(nodes_.size());
  for (const Node& n : nodes_)
    for (int i : n.inputs) out[i].push_back(n.id);
  return out;
}

std::vector<int> in_place_nodes(const Graph& g) {
  std::vector<int> out;
  for (const Node& n : g.nodes())
    if (n.def && n.def->inplace_input >= 0) out.push_back(n.id);
  return out;
}

}  // namespace sf
