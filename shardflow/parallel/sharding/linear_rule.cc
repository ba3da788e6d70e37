// Linear's sharding rule (ops/kernels/linear.cc), and LinearGradWeight's: one loop per leading
// dim of x, then k (reduce) and n (columns). A split of a leading dim (a transformer's batch or
// sequence) needs no communication; a split of n is a column-parallel layer (w's rows split,
// the output's last dim split); a split of k is a row-parallel layer whose output is partial,
// summed by AllReduce, or by ReduceScatter onto a leading dim under an out_strategy (sequence
// parallel). LinearGradWeight reduces over the leading loops, so a data-parallel split leaves
// the weight's gradient partial over it.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
struct LinearLoops {
  LoopNest nest;
  std::vector<int> lead;
  int k = 0, n = 0;
};

LinearLoops linear_loops(int lead_dims) {
  LinearLoops l;
  for (int d = 0; d < lead_dims; ++d) {
    l.nest.loops.push_back(fmt::format("d{}", d));
    l.lead.push_back(d);
  }
  l.k = lead_dims;
  l.n = lead_dims + 1;
  l.nest.loops.insert(l.nest.loops.end(), {"k (reduce)", "n (columns)"});
  l.nest.whole.assign(l.nest.loops.size(), false);
  return l;
}

std::vector<int> with(std::vector<int> dims, int last) {
  dims.push_back(last);
  return dims;
}

LoopNest linear_nest(const Node& node, const std::vector<Shape>& inputs) {
  LinearLoops l = linear_loops(static_cast<int>(inputs[0].size()) - 1);  // shape inference checked rank >= 1
  const bool tb = node.attrs.get_int("transpose_b", 1) != 0;
  l.nest.inputs = {with(l.lead, l.k), tb ? std::vector<int>{l.n, l.k} : std::vector<int>{l.k, l.n}};
  l.nest.output = with(l.lead, l.n);
  return l.nest;
}

LoopNest grad_weight_nest(const Node& node, const std::vector<Shape>& inputs) {
  LinearLoops l = linear_loops(static_cast<int>(inputs[0].size()) - 1);
  const bool tb = node.attrs.get_int("transpose_b", 1) != 0;
  l.nest.inputs = {with(l.lead, l.k), with(l.lead, l.n)};
  l.nest.output = tb ? std::vector<int>{l.n, l.k} : std::vector<int>{l.k, l.n};
  return l.nest;
}
}  // namespace

const ShardingRule kLinearRule{linear_nest};
const ShardingRule kLinearGradWeightRule{grad_weight_nest};

}  // namespace sf
