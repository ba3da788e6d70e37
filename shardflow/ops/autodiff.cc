#include <shardflow/ops/autodiff.h>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/op_def.h>
#include <shardflow/ops/plan.h>

namespace sf {

std::vector<int> gradients(Graph& g, int loss, const std::vector<int>& wrt) {
  const Node& loss_node = g.node(loss);
  SF_ENFORCE(numel(loss_node.shape) == 1 && loss_node.dtype == DType::kF32, InvalidArgument,
             "gradients: loss {} must be an f32 scalar, got {}{}", node_label(loss_node), dtype_name(loss_node.dtype),
             brief_shape(loss_node.shape));
  const int n = loss + 1;  // nodes after the loss cannot influence it

  // relevant = depends on some wrt AND the loss depends on it.
  std::vector<char> depends(n, 0), relevant(n, 0), is_wrt(n, 0);
  for (int w : wrt) {
    SF_ENFORCE(w >= 0 && w < g.size(), InvalidArgument, "gradients: wrt id {} out of range", w);
    if (w < n) depends[w] = is_wrt[w] = 1;
  }
  for (int id = 0; id < n; ++id)
    for (int i : g.node(id).inputs) depends[id] |= depends[i];
  for (int id : needed_nodes(g, {loss})) relevant[id] = depends[id];

  std::vector<std::vector<int>> contributions(n);
  std::vector<int> total(n, -1);
  contributions[loss].push_back(
      g.add("Fill", {}, {{"shape", loss_node.shape}, {"value", 1.0}}, fmt::format("Gradients/{}/seed", loss_node.name)));

  for (int id = loss; id >= 0; --id) {
    if (!relevant[id] || contributions[id].empty()) continue;
    // Copy what we need: g.add() below may grow the graph (node references stay valid).
    const Node& fwd = g.node(id);
    int dout = contributions[id][0];
    for (size_t k = 1; k < contributions[id].size(); ++k)
      dout = g.add("Add", {dout, contributions[id][k]}, {}, fmt::format("Gradients/{}/Accumulate-{}", fwd.name, k));
    total[id] = dout;
    std::vector<bool> wanted;
    bool any = false;
    for (int i : fwd.inputs) {
      wanted.push_back(relevant[i] != 0);
      any |= relevant[i] != 0;
    }
    if (!any) continue;
    SF_ENFORCE(static_cast<bool>(fwd.def->grad), InvalidArgument, "gradients: {} has no gradient rule",
               node_label(fwd));
    GradContext ctx(g, fwd, wanted);
    std::vector<int> dins = fwd.def->grad(ctx, fwd, dout);
    SF_ENFORCE(dins.size() == fwd.inputs.size(), InvalidArgument, "gradients: rule of {} returned {} grads for {} inputs",
               node_label(fwd), dins.size(), fwd.inputs.size());
    for (size_t k = 0; k < dins.size(); ++k)
      if (dins[k] >= 0 && wanted[k]) contributions[fwd.inputs[k]].push_back(dins[k]);
  }

  std::vector<int> out;
  for (int w : wrt) {
    if (w < n && total[w] >= 0) {
      out.push_back(total[w]);
    } else {
      const Node& wn = g.node(w);
      out.push_back(g.add("Fill", {}, {{"shape", wn.shape}, {"value", 0.0}},
                          fmt::format("Gradients/{}/zeros", wn.name)));
    }
  }
  return out;
}

}  // namespace sf
