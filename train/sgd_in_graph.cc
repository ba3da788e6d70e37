#include "train/sgd_in_graph.h"

#include <algorithm>
#include <fmt/format.h>

#include "ops/plan.h"

namespace sf {

std::vector<int> append_sgd_updates(Graph& g, const std::vector<int>& params, const std::vector<int>& grads,
                                    float lr) {
  const auto consumers = g.consumers();
  const std::vector<int> step = needed_nodes(g, grads);  // what the step runs anyway
  std::vector<int> updates;
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = g.node(params[i]);
    const Node& grad = g.node(grads[i]);
    const std::vector<int> before = needed_nodes(g, {grad.id});  // already ordered before the update
    std::vector<int> controls;
    for (int c : consumers[p.id])
      if (std::binary_search(step.begin(), step.end(), c) && !std::binary_search(before.begin(), before.end(), c) &&
          std::find(controls.begin(), controls.end(), c) == controls.end())
        controls.push_back(c);
    Attrs attrs{{"alpha", static_cast<double>(lr)}, {"num_control", static_cast<int64_t>(controls.size())}};
    std::vector<int> inputs{p.id};
    std::string op = "ApplyGradientDescent";
    if (grad.op == "MatMul") {
      op = "MatMulGradientDescent";
      inputs.insert(inputs.end(), grad.inputs.begin(), grad.inputs.end());
      attrs.set("transpose_a", grad.attrs.get_int("transpose_a")).set("transpose_b", grad.attrs.get_int("transpose_b"));
    } else {
      inputs.push_back(grad.id);
    }
    inputs.insert(inputs.end(), controls.begin(), controls.end());
    updates.push_back(g.add(op, inputs, std::move(attrs), fmt::format("Optimizer/{}/{}", p.name, op)));
  }
  return updates;
}

}  // namespace sf
