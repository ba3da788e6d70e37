#include <shardflow/ops/executor.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/ops/plan.h>

namespace sf {

Executor::Executor(const Graph& g, std::vector<int> fetches)
    : g_(g), fetches_(std::move(fetches)), order_(needed_nodes(g, fetches_)), values_(g.size()) {
  for (int id : order_) {
    const Node& n = g_.node(id);
    if (!n.def->is_source() && n.def->inplace_input < 0) values_[id] = allocate_output(n);
  }
}

void Executor::bind(int node_id, const Tensor& t) {
  const Node& n = g_.node(node_id);
  SF_ENFORCE(n.def->is_source(), InvalidArgument, "{}: only Input and Parameter nodes can be bound", node_label(n));
  check_binding(n, t);
  values_[node_id] = t;
}

const std::vector<Tensor>& Executor::run() {
  for (int id : order_) {
    const Node& n = g_.node(id);
    if (n.def->is_source()) {
      SF_ENFORCE(values_[id].defined(), InvalidArgument, "{}: no tensor bound before run()", node_label(n));
      continue;
    }
    scratch_inputs_.clear();
    for (int i : n.inputs) scratch_inputs_.push_back(values_[i]);
    if (n.def->inplace_input >= 0) values_[id] = scratch_inputs_[n.def->inplace_input];
    n.def->forward(n, scratch_inputs_, values_[id]);
  }
  results_.clear();
  for (int f : fetches_) results_.push_back(values_[f]);
  return results_;
}

}  // namespace sf
