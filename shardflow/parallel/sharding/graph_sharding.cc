#include <shardflow/parallel/sharding/graph_sharding.h>

#include <algorithm>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/ops/plan.h>
#include <shardflow/parallel/redistribution_planner.h>

namespace sf {

namespace {
bool is_source(const Node& n) { return n.inputs.empty(); }

void check_table(const Graph& g, const StrategyTable& table) {
  for (const auto& [name, s] : table) {
    const int id = g.find(name);
    SF_ENFORCE(id >= 0, NotFound, "strategy {} for '{}': the network has no op of that name", s.str(), name);
    SF_ENFORCE(!is_source(g.node(id)), InvalidArgument, "strategy {} for '{}': {} is a {}, only ops take strategies",
               s.str(), name, name, g.node(id).op);
  }
}

// An in-place op (BatchNormUpdateMoving) must update its tensor where that tensor lives: with
// no strategy of its own it takes, for each input it shares with the op that first reads the
// tensor it updates (its BatchNorm), that op's entry, and leaves its other inputs unsplit.
// Sharing the loop order with that op (the rules make sure), it then has the same device
// matrix and the same layouts, so the update needs no communication. None without such an op.
std::optional<OpStrategy> followed_strategy(const Graph& g, const GraphSharding& gs, const Node& n,
                                            std::string& leader_name) {
  const int target = n.inputs[n.def->inplace_input];
  for (int c : gs.nodes) {
    if (c >= n.id) break;
    const Node& leader = g.node(c);
    auto it = gs.by_node.find(c);
    if (it == gs.by_node.end() || !it->second.op) continue;
    if (std::find(leader.inputs.begin(), leader.inputs.end(), target) == leader.inputs.end()) continue;
    const OpStrategy& ls = it->second.op->strategy;
    OpStrategy s;
    for (int in : n.inputs) {
      const auto j = std::find(leader.inputs.begin(), leader.inputs.end(), in) - leader.inputs.begin();
      const int dims = static_cast<int>(g.node(in).shape.size());
      if (j < static_cast<std::ptrdiff_t>(leader.inputs.size())) {
        s.in.push_back(ls.in[j]);
      } else if (ls.in[0].is_layout()) {
        const TensorLayout& l = ls.in[0].layout();
        s.in.emplace_back(TensorLayout(l.mesh(), TensorLayout::TensorMap(dims), {}, l.axis_names()));
      } else {
        s.in.emplace_back(Strategy(dims, 1));
      }
    }
    leader_name = leader.name;
    return s;
  }
  return std::nullopt;
}

// The op's strategy: the table's, else (an in-place op) the one it follows, else the default.
OpSharding shard_node(const Graph& g, const GraphSharding& gs, const Node& n, const StrategyTable& table,
                      int64_t devices) {
  std::vector<Shape> shapes;
  for (int p : n.inputs) shapes.push_back(g.node(p).shape);
  auto it = table.find(n.name);
  if (it != table.end()) return shard_op(n, shapes, it->second, devices);
  std::string leader;
  if (n.def && n.def->inplace_input >= 0)
    if (std::optional<OpStrategy> s = followed_strategy(g, gs, n, leader)) {
      OpSharding out = shard_op(n, shapes, s, devices);
      out.given = false;
      out.follows = leader;
      return out;
    }
  return shard_op(n, shapes, std::nullopt, devices);
}

// Refuses an in-place op whose strategy would move the tensor it updates (it would update a
// copy) or its result (the update must stay where the tensor is).
void check_in_place(const Graph& g, const Node& n, const NodeSharding& ns) {
  const int k = n.def->inplace_input;
  const RedistributionPlan& moved = ns.in_plans[k].steps.empty() ? ns.out_plan : ns.in_plans[k];
  SF_ENFORCE(moved.steps.empty(), InvalidArgument,
             "{}: it updates '{}' in place, so its strategy {} must leave that tensor where it is, not move it from {} "
             "to {}; give the op no strategy and it follows the op that reads the tensor first",
             node_label(n), g.node(n.inputs[k]).name, ns.op->strategy.str(), moved.from.str(), moved.to.str());
}

std::string plan_str(const RedistributionPlan& p) {
  std::vector<std::string> steps;
  for (const RedistributionStep& s : p.steps) steps.push_back(s.str());
  return fmt::format("{}", fmt::join(steps, "; "));
}
}  // namespace

std::string strategy_origin(const OpSharding& s) {
  if (s.given) return "";
  return s.follows.empty() ? " (default)" : fmt::format(" (follows {})", s.follows);
}

const NodeSharding& GraphSharding::at(int id) const {
  auto it = by_node.find(id);
  SF_ENFORCE(it != by_node.end(), InvalidArgument, "graph sharding: node {} is not one the outputs need", id);
  return it->second;
}

GraphSharding shard_graph(const Graph& g, const std::vector<int>& outputs, const StrategyTable& table,
                          int64_t devices) {
  check_table(g, table);
  GraphSharding gs;
  gs.devices = devices;
  // A program runs every in-place op of its forward graph (BatchNorm's moving statistics'
  // updates), though the outputs do not read them.
  std::vector<int> roots = outputs;
  for (int id : in_place_nodes(g)) roots.push_back(id);
  gs.nodes = needed_nodes(g, roots);
  for (int id : gs.nodes) {
    const Node& n = g.node(id);
    if (is_source(n)) continue;
    NodeSharding ns;
    ns.op = shard_node(g, gs, n, table, devices);
    ns.layout = ns.op->carried;
    gs.by_node.emplace(id, std::move(ns));
  }
  // Sources: the layout of their first consumer (in node order); a Fill, or a source only an
  // output reads, is replicated.
  for (int id : gs.nodes) {
    const Node& n = g.node(id);
    if (!is_source(n)) continue;
    NodeSharding ns;
    ns.layout = TensorLayout::replicated(DeviceMatrix({devices}), static_cast<int>(n.shape.size()));
    if (n.op != "Fill")
      for (int c : gs.nodes) {
        const Node& consumer = g.node(c);
        bool found = false;
        for (size_t i = 0; i < consumer.inputs.size() && !found; ++i)
          if (consumer.inputs[i] == id) {
            ns.layout = gs.by_node.at(c).op->inputs[i];
            found = true;
          }
        if (found) break;
      }
    gs.by_node.emplace(id, std::move(ns));
  }
  for (int id : gs.nodes) {
    const Node& n = g.node(id);
    NodeSharding& ns = gs.by_node.at(id);
    if (!ns.op) continue;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Node& p = g.node(n.inputs[i]);
      ns.in_plans.push_back(plan_redistribution(gs.by_node.at(p.id).layout, ns.op->inputs[i], p.shape, p.dtype,
                                                fmt::format("{} input {}", node_label(n), i)));
    }
    ns.out_plan = plan_redistribution(ns.op->output, ns.op->carried, n.shape, n.dtype, node_label(n) + " output");
    if (n.def && n.def->inplace_input >= 0) check_in_place(g, n, ns);
  }
  return gs;
}

std::string GraphSharding::str(const Graph& g) const {
  std::string out;
  for (int id : nodes) {
    const Node& n = g.node(id);
    const NodeSharding& ns = at(id);
    if (!ns.op) {
      out += fmt::format("%{} {} {}: layout {}\n", id, n.op, n.name, ns.layout.str());
      continue;
    }
    const OpSharding& s = *ns.op;
    std::vector<std::string> ins;
    for (const TensorLayout& l : s.inputs) ins.push_back(l.str());
    out += fmt::format("%{} {} {}: {}{} device matrix {}; inputs {}; output {}", id, n.op, n.name, s.strategy.str(),
                       strategy_origin(s), s.mesh.str(), fmt::join(ins, " | "), s.output.str());
    for (size_t i = 0; i < ns.in_plans.size(); ++i)
      if (!ns.in_plans[i].steps.empty()) out += fmt::format("; input {} via {}", i, plan_str(ns.in_plans[i]));
    if (!ns.out_plan.steps.empty()) out += fmt::format("; output via {}", plan_str(ns.out_plan));
    out += "\n";
  }
  return out;
}

}  // namespace sf
