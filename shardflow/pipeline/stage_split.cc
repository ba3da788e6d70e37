// Stage inference and checks on the original graph, then one graph per virtual stage built by
// copying nodes, with its objective.
#include <shardflow/pipeline/stage_split.h>

#include <algorithm>
#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/op_def.h>

namespace sf::pipeline {
namespace {

bool source_like(const Node& n) { return n.inputs.empty(); }

// Nodes `roots` depend on, roots included.
std::vector<char> ancestors(const Graph& g, const std::vector<int>& roots) {
  std::vector<char> seen(g.size(), 0);
  std::vector<int> todo(roots.begin(), roots.end());
  while (!todo.empty()) {
    const int id = todo.back();
    todo.pop_back();
    if (id < 0 || seen[id]) continue;
    seen[id] = 1;
    for (int in : g.node(id).inputs) todo.push_back(in);
  }
  return seen;
}

void infer_stages(const Graph& g, const std::vector<char>& needed, std::vector<int>& stage, int virtual_stages) {
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    SF_ENFORCE(stage[id] < virtual_stages, InvalidArgument,
               "pipeline: {} is assigned to stage {}, but there are only {} stages", node_label(n), stage[id],
               virtual_stages);
    if (!needed[id] || source_like(n)) continue;
    int latest = -1;
    for (int in : n.inputs) {
      const Node& i = g.node(in);
      if (source_like(i)) continue;
      SF_ENFORCE(stage[id] < 0 || stage[in] <= stage[id], InvalidArgument,
                 "pipeline: {} on stage {} reads {} from the later stage {}; stages must not decrease in "
                 "execution order",
                 node_label(n), stage[id], node_label(i), stage[in]);
      latest = std::max(latest, stage[in]);
    }
    if (stage[id] < 0) stage[id] = std::max(latest, 0);
  }
  const auto consumers = g.consumers();
  for (int id = 0; id < g.size(); ++id) {
    if (!source_like(g.node(id)) || stage[id] >= 0) continue;
    int earliest = virtual_stages;
    for (int c : consumers[id])
      if (needed[c]) earliest = std::min(earliest, stage[c]);
    stage[id] = earliest == virtual_stages ? 0 : earliest;
  }
}

struct SplitBuilder {
  const Graph& src;
  StageGraph out;
  std::vector<int> map;  // original id -> id in out.graph

  int get(int orig) {
    if (map[orig] >= 0) return map[orig];
    const Node& n = src.node(orig);
    SF_ENFORCE(source_like(n), Error, "pipeline: {} is needed on stage {} but was not made there or received",
               node_label(n), out.virtual_stage);
    const int id = out.graph.add(n.op, {}, n.attrs, n.name);
    if (n.op == "Input") {
      out.data_inputs.push_back(id);
      out.data_names.push_back(n.name);
    } else if (n.op == "Parameter") {
      out.param_nodes.push_back(id);
      out.param_names.push_back(n.name);
    }
    return map[orig] = id;
  }
};

}  // namespace

std::vector<StageGraph> split_stages(const Graph& g, int loss, std::vector<int> stage, int virtual_stages) {
  SF_ENFORCE(virtual_stages >= 1, InvalidArgument, "pipeline: the number of stages must be >= 1, got {}",
             virtual_stages);
  SF_ENFORCE(static_cast<int>(stage.size()) == g.size(), InvalidArgument,
             "pipeline: {} stage assignments for a graph of {} nodes", stage.size(), g.size());
  std::vector<int> roots{loss};
  for (int id : in_place_nodes(g)) roots.push_back(id);
  const std::vector<char> needed = ancestors(g, roots);
  infer_stages(g, needed, stage, virtual_stages);

  const int loss_stage = stage[loss];
  SF_ENFORCE(loss_stage == virtual_stages - 1, InvalidArgument,
             "pipeline: the loss {} is computed on stage {}, but the last stage is {}: the last stage must end "
             "the network",
             node_label(g.node(loss)), loss_stage, virtual_stages - 1);
  std::vector<int> owned(virtual_stages, 0);
  for (int id = 0; id < g.size(); ++id)
    if (needed[id] && !source_like(g.node(id))) ++owned[stage[id]];
  for (int k = 0; k < virtual_stages; ++k)
    SF_ENFORCE(owned[k] > 0, InvalidArgument,
               "pipeline: stage {} has no cell: every stage in [0, {}) needs at least one (check the "
               "cells' pipeline_stage)",
               k, virtual_stages);

  // boundary[k]: values made on stages <= k and read after k, in id order.
  const auto consumers = g.consumers();
  std::vector<std::vector<int>> boundary(virtual_stages);
  for (int id = 0; id < g.size(); ++id) {
    if (!needed[id] || source_like(g.node(id))) continue;
    int last_reader = stage[id];
    for (int c : consumers[id])
      if (needed[c]) last_reader = std::max(last_reader, stage[c]);
    for (int k = stage[id]; k < last_reader; ++k) boundary[k].push_back(id);
  }

  std::vector<StageGraph> stages;
  for (int k = 0; k < virtual_stages; ++k) {
    SplitBuilder b{g, {}, std::vector<int>(g.size(), -1)};
    b.out.virtual_stage = k;
    Graph& sg = b.out.graph;
    if (k > 0)
      for (int u : boundary[k - 1]) {
        const Node& n = g.node(u);
        b.map[u] = sg.add("Input", {}, {{"shape", n.shape}, {"dtype", std::string(dtype_name(n.dtype))}},
                          "recv/" + n.name);
        b.out.recv_inputs.push_back(b.map[u]);
      }
    for (int id = 0; id < g.size(); ++id) {
      const Node& n = g.node(id);
      if (!needed[id] || source_like(n) || stage[id] != k) continue;
      std::vector<int> ins;
      for (int in : n.inputs) ins.push_back(b.get(in));
      b.map[id] = sg.add(n.op, std::move(ins), n.attrs, n.name);
    }
    b.out.state_updates = in_place_nodes(sg);  // before the backward adds any node
    for (int u : boundary[k]) b.out.send_outputs.push_back(b.map[u]);

    GraphBuilder gb(sg);
    // Named per virtual stage: strategy tables and files name ops of every stage in one table.
    gb.push_scope(fmt::format("Pipeline/objective{}", k));
    Value objective;
    if (k == virtual_stages - 1) {
      b.out.loss = b.map[loss];
      objective = Value{b.out.loss};
    } else {
      for (int o : b.out.send_outputs) {
        const Node& n = sg.node(o);
        SF_ENFORCE(n.dtype == DType::kF32, InvalidArgument,
                   "pipeline: {} crosses from stage {} to {} but is {}; only f32 values can cross a stage "
                   "boundary",
                   node_label(n), k, k + 1, dtype_name(n.dtype));
        Value dout = gb.input("dout/" + n.name, n.shape);
        b.out.dout_inputs.push_back(dout.id);
        Value term = gb.reduce_sum(gb.mul(Value{o}, dout));
        objective = objective.valid() ? gb.add(objective, term) : term;
      }
    }
    gb.pop_scope();
    b.out.objective = objective.id;
    stages.push_back(std::move(b.out));
  }
  return stages;
}

}  // namespace sf::pipeline
