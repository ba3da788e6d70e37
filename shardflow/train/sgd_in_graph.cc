#include <shardflow/train/sgd_in_graph.h>

#include <algorithm>
#include <fmt/format.h>

#include <shardflow/ops/plan.h>

namespace sf {

namespace {
// The summands of a gradient: autodiff accumulates the contributions of several readers
// (e.g. the copies of a network for the row blocks of a batch) with same-shape Adds, and
// W -= lr * (a + b) is W -= lr * a; W -= lr * b, each of which can fuse with its GEMM.
void collect_terms(const Graph& g, int id, std::vector<int>& terms) {
  const Node& n = g.node(id);
  if (n.op == "Add" && g.node(n.inputs[0]).shape == n.shape && g.node(n.inputs[1]).shape == n.shape) {
    collect_terms(g, n.inputs[0], terms);
    collect_terms(g, n.inputs[1], terms);
  } else {
    terms.push_back(id);
  }
}

// The readers of parameter p in this step (`step`: sorted node ids) that an update with these
// data inputs is not already ordered after: it must wait for them (control inputs) before it
// writes p.
std::vector<int> waits_for(const Graph& g, const std::vector<std::vector<int>>& consumers, const std::vector<int>& step,
                           int p, const std::vector<int>& data) {
  const std::vector<int> before = needed_nodes(g, data);
  std::vector<int> ctl;
  for (int c : consumers[p])
    if (std::binary_search(step.begin(), step.end(), c) && !std::binary_search(before.begin(), before.end(), c) &&
        std::find(ctl.begin(), ctl.end(), c) == ctl.end())
      ctl.push_back(c);
  return ctl;
}
}  // namespace

std::vector<int> append_sgd_updates(Graph& g, const std::vector<int>& params, const std::vector<int>& grads,
                                    float lr, const std::vector<WholeInput>& wholes) {
  auto stack = [&](const std::vector<int>& parts, const std::string& name) {
    for (const auto& w : wholes)
      if (w.parts == parts) return w.whole;
    return g.add("Concat", parts, {{"axis", int64_t{0}}}, name);
  };
  const auto consumers = g.consumers();
  const std::vector<int> step = needed_nodes(g, grads);  // what the step runs anyway
  std::vector<int> updates;
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = g.node(params[i]);
    std::vector<int> terms;
    collect_terms(g, grads[i], terms);
    auto controls_for = [&](const std::vector<int>& data) { return waits_for(g, consumers, step, p.id, data); };
    // Summands a_i^T b_i from the row blocks of a batch are one GEMM over the whole batch,
    // concat(a)^T concat(b): a small copy, then a single pass over the parameter. That GEMM
    // is cut into column blocks, two per summand, updated concurrently (disjoint columns).
    const int64_t cols = p.shape.size() == 2 ? p.shape[1] : 0;
    const size_t want_blocks = 2 * terms.size();  // more blocks than threads: they balance
    bool stacked = terms.size() > 1 && cols >= static_cast<int64_t>(want_blocks);
    for (int t : terms) {
      const Node& n = g.node(t);
      stacked = stacked && n.op == "MatMul" && n.attrs.get_bool("transpose_a") && !n.attrs.get_bool("transpose_b");
    }
    std::vector<int> gemm;  // (a, b) of the single GEMM, if stacked
    if (stacked) {
      std::vector<int> as, bs;
      for (int t : terms) {
        as.push_back(g.node(t).inputs[0]);
        bs.push_back(g.node(t).inputs[1]);
      }
      gemm = {stack(as, fmt::format("Optimizer/{}/ConcatA", p.name)),
              stack(bs, fmt::format("Optimizer/{}/ConcatB", p.name))};
    }
    const size_t blocks = stacked ? want_blocks : 1;
    for (size_t c = 0; c < blocks; ++c) {
      int prev = -1;
      for (size_t j = 0; j < (stacked ? 1 : terms.size()); ++j) {  // unstacked summands are chained
        // The first update of a chain waits for every reader of p outside its own data
        // dependencies; the next ones follow it.
        const Node& term = g.node(terms[j]);
        const std::vector<int> ctl =
            prev >= 0 ? std::vector<int>{prev} : controls_for(stacked ? gemm : std::vector<int>{term.id});
        Attrs attrs{{"alpha", static_cast<double>(lr)}, {"num_control", static_cast<int64_t>(ctl.size())}};
        std::vector<int> inputs{p.id};
        std::string op = "ApplyGradientDescent";
        if (stacked) {
          op = "MatMulGradientDescent";
          inputs.insert(inputs.end(), gemm.begin(), gemm.end());
          attrs.set("transpose_a", int64_t{1})
              .set("col_begin", static_cast<int64_t>(c) * cols / static_cast<int64_t>(blocks))
              .set("col_end", static_cast<int64_t>(c + 1) * cols / static_cast<int64_t>(blocks));
        } else if (term.op == "MatMul") {
          op = "MatMulGradientDescent";
          inputs.insert(inputs.end(), term.inputs.begin(), term.inputs.end());
          attrs.set("transpose_a", term.attrs.get_int("transpose_a"))
              .set("transpose_b", term.attrs.get_int("transpose_b"));
        } else {
          inputs.push_back(term.id);
        }
        inputs.insert(inputs.end(), ctl.begin(), ctl.end());
        prev = g.add(op, inputs, std::move(attrs), fmt::format("Optimizer/{}/{}-{}.{}", p.name, op, c, j));
      }
      updates.push_back(prev);
    }
  }
  return updates;
}

std::vector<int> append_reduced_sgd_updates(Graph& g, const std::vector<int>& params, const ReducedGradients& reduced,
                                            float lr) {
  const auto consumers = g.consumers();
  const std::vector<int> step = needed_nodes(g, reduced.node);
  std::vector<int> updates;
  for (size_t i = 0; i < params.size(); ++i) {
    const Node& p = g.node(params[i]);
    const std::vector<int> ctl = waits_for(g, consumers, step, p.id, {reduced.node[i]});
    Attrs attrs{{"alpha", static_cast<double>(lr)}, {"num_control", static_cast<int64_t>(ctl.size())}};
    if (g.node(reduced.node[i]).shape != p.shape || reduced.offset[i] != 0) attrs.set("delta_offset", reduced.offset[i]);
    std::vector<int> inputs{p.id, reduced.node[i]};
    inputs.insert(inputs.end(), ctl.begin(), ctl.end());
    updates.push_back(g.add("ApplyGradientDescent", inputs, std::move(attrs),
                            fmt::format("Optimizer/{}/ApplyGradientDescent", p.name)));
  }
  return updates;
}

}  // namespace sf
