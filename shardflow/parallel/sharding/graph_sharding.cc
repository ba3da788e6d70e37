#include <shardflow/parallel/sharding/graph_sharding.h>

#include <fmt/format.h>

#include <shardflow/core/error.h>
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

std::string plan_str(const RedistributionPlan& p) {
  std::vector<std::string> steps;
  for (const RedistributionStep& s : p.steps) steps.push_back(s.str());
  return fmt::format("{}", fmt::join(steps, "; "));
}
}  // namespace

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
  gs.nodes = needed_nodes(g, outputs);
  for (int id : gs.nodes) {
    const Node& n = g.node(id);
    if (is_source(n)) continue;
    std::vector<Shape> shapes;
    for (int p : n.inputs) shapes.push_back(g.node(p).shape);
    auto it = table.find(n.name);
    NodeSharding ns;
    ns.op = shard_op(n, shapes, it == table.end() ? std::nullopt : std::optional<OpStrategy>(it->second), devices);
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
                       s.given ? "" : " (default)", s.mesh.str(), fmt::join(ins, " | "), s.output.str());
    for (size_t i = 0; i < ns.in_plans.size(); ++i)
      if (!ns.in_plans[i].steps.empty()) out += fmt::format("; input {} via {}", i, plan_str(ns.in_plans[i]));
    if (!ns.out_plan.steps.empty()) out += fmt::format("; output via {}", plan_str(ns.out_plan));
    out += "\n";
  }
  return out;
}

}  // namespace sf
