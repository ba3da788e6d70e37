#include <shardflow/parallel/step_estimate.h>

#include <fmt/format.h>

#include <shardflow/core/dtype.h>

namespace sf {

double local_bytes(const TensorLayout& layout, const Node& n) {
  double elements = 1;
  for (int64_t d : layout.local_shape(n.shape)) elements *= static_cast<double>(d);
  return elements * static_cast<double>(dtype_size(n.dtype));
}

namespace {

// The collective that undoes `kind` in the backward.
std::string_view adjoint(StepKind kind) {
  switch (kind) {
    case StepKind::kAllGather: return step_kind_name(StepKind::kReduceScatter);
    case StepKind::kReduceScatter: return step_kind_name(StepKind::kAllGather);
    default: return step_kind_name(kind);
  }
}

void add_plan(const RedistributionPlan& plan, std::map<std::string, double>& bytes) {
  for (const RedistributionStep& s : plan.steps) {
    if (!s.communicates()) continue;
    bytes[std::string(step_kind_name(s.kind))] += s.bytes;
    bytes[std::string(adjoint(s.kind))] += s.bytes;
  }
}

}  // namespace

double StepEstimate::communication_bytes() const {
  double total = 0;
  for (const auto& [kind, b] : collective_bytes) total += b;
  return total;
}

std::string StepEstimate::str() const {
  std::string out = fmt::format("parameters {:.0f} B, activations {:.0f} B\n", parameter_bytes, activation_bytes);
  for (const auto& [kind, b] : collective_bytes) out += fmt::format("{} {:.0f} B\n", kind, b);
  return out;
}

StepEstimate estimate_step(const Graph& g, const GraphSharding& sharding) {
  StepEstimate e;
  for (int id : sharding.nodes) {
    const Node& n = g.node(id);
    const NodeSharding& ns = sharding.at(id);
    if (ns.op) {
      e.activation_bytes += local_bytes(ns.op->output, n);
      for (const RedistributionPlan& p : ns.in_plans) add_plan(p, e.collective_bytes);
      add_plan(ns.out_plan, e.collective_bytes);
    } else if (n.op == "Parameter") {
      const double block = local_bytes(ns.layout, n);
      e.parameter_bytes += block;
      const auto replicas = static_cast<double>(ns.layout.replica_group(0).size());
      if (replicas > 1) e.collective_bytes["AllReduce (gradients)"] += 2 * (replicas - 1) / replicas * block;
    }
  }
  return e;
}

}  // namespace sf
