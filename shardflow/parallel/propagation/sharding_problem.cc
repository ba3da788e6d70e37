#include <shardflow/parallel/propagation/sharding_problem.h>

#include <algorithm>

#include <shardflow/ops/plan.h>
#include <shardflow/parallel/redistribution_planner.h>

namespace sf {

ShardingProblem::ShardingProblem(const Graph& g, const std::vector<int>& outputs, int64_t devices,
                                 std::string_view dataset_strategy)
    : g_(g), devices_(devices), is_op_(g.size(), false) {
  const std::vector<int> needed = needed_nodes(g, outputs);
  for (int id : needed) {
    const Node& n = g.node(id);
    if (n.inputs.empty()) {
      // The batch split over every device along dim 0, where that divides it.
      if (n.op == "Input" && dataset_strategy == "data_parallel" && !n.shape.empty() && n.shape[0] % devices == 0) {
        TensorLayout::TensorMap map(n.shape.size());
        map[0] = {0};
        source_layout_.emplace(id, TensorLayout(DeviceMatrix({devices}), std::move(map)));
      }
      continue;
    }
    is_op_[id] = true;
    ops_.push_back(id);
    auto& shapes = shapes_[id];
    auto& in = in_[id];
    out_[id];
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      shapes.push_back(g.node(n.inputs[i]).shape);
      in.push_back({n.inputs[i], id, static_cast<int>(i)});
    }
  }
  for (int id : ops_)
    for (const Edge& e : in_[id])
      if (is_op_[e.producer]) out_[e.producer].push_back(e);
}

const std::vector<Candidate>& ShardingProblem::candidates(int op) {
  auto it = candidates_.find(op);
  if (it == candidates_.end()) it = candidates_.emplace(op, op_candidates(g_.node(op), shapes_.at(op), devices_)).first;
  return it->second;
}

std::vector<int> ShardingProblem::neighbours(int op) const {
  std::vector<int> out;
  for (const Edge& e : in_.at(op))
    if (is_op_[e.producer]) out.push_back(e.producer);
  for (const Edge& e : out_.at(op)) out.push_back(e.consumer);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double ShardingProblem::bytes(const Edge& e, const TensorLayout& from, const TensorLayout& to) {
  if (from == to) return 0;
  const Node& p = g_.node(e.producer);
  const std::string key = from.str() + "|" + to.str() + "|" + shape_str(p.shape);
  auto it = plan_bytes_.find(key);
  if (it == plan_bytes_.end())
    it = plan_bytes_.emplace(key, plan_redistribution(from, to, p.shape, p.dtype, node_label(p)).bytes()).first;
  return it->second;
}

double ShardingProblem::edge_bytes(int op, const OpSharding& s, const Choice& chosen) {
  double total = 0;
  for (const Edge& e : in_.at(op)) {
    if (const OpSharding* p = chosen[e.producer]) {
      total += bytes(e, p->carried, s.inputs[e.slot]);
    } else if (auto src = source_layout_.find(e.producer); src != source_layout_.end()) {
      total += bytes(e, src->second, s.inputs[e.slot]);
    }
  }
  for (const Edge& e : out_.at(op))
    if (const OpSharding* c = chosen[e.consumer]) total += bytes(e, s.carried, c->inputs[e.slot]);
  return total;
}

}  // namespace sf
