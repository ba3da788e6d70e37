#include <shardflow/ops/plan.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf {

std::vector<int> needed_nodes(const Graph& g, const std::vector<int>& fetches) {
  std::vector<char> need(g.size(), 0);
  for (int f : fetches) need[g.node(f).id] = 1;
  for (int id = g.size() - 1; id >= 0; --id)
    if (need[id])
      for (int i : g.node(id).inputs) need[i] = 1;
  std::vector<int> out;
  for (int id = 0; id < g.size(); ++id)
    if (need[id]) out.push_back(id);
  return out;
}

void check_binding(const Node& n, const Tensor& t) {
  SF_ENFORCE(t.defined(), InvalidArgument, "{}: no tensor bound", node_label(n));
  SF_ENFORCE(t.dtype() == n.dtype, InvalidArgument, "{}: expected dtype {}, got {} (tensor {})", node_label(n),
             dtype_name(n.dtype), dtype_name(t.dtype()), t.describe());
  SF_ENFORCE(t.shape() == n.shape, InvalidArgument, "{}: expected shape {}, got {}", node_label(n),
             brief_shape(n.shape), brief_shape(t.shape()));
}

}  // namespace sf
