// ReduceSum / ReduceMean's sharding rule: one loop per input dim; the reduced dims' loops are
// absent from the output, so splitting one leaves each rank a partial sum over its block (and
// a partial mean, scaled by 1/blocks, for ReduceMean), which AllReduce or ReduceScatter then
// resolves. With keep_dims each reduced dim stays as a dim of size 1, a loop of its own that
// no input splits.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest reduce_nest(const Node& node, const std::vector<Shape>& inputs) {
  const int r = static_cast<int>(inputs[0].size());
  std::vector<bool> reduced(r, false);
  const std::vector<int64_t> axes = node.attrs.get_ints("axis");
  for (int64_t a : axes) reduced[a < 0 ? a + r : a] = true;  // shape inference checked the range
  if (axes.empty()) reduced.assign(r, true);
  const bool keep = node.attrs.get_bool("keep_dims");
  LoopNest nest;
  nest.mean = node.op == "ReduceMean";
  std::vector<int> x;
  for (int d = 0; d < r; ++d) {
    nest.loops.push_back(reduced[d] ? fmt::format("d{} (reduced)", d) : fmt::format("d{}", d));
    x.push_back(d);
  }
  nest.inputs = {x};
  for (int d = 0; d < r; ++d) {
    if (!reduced[d]) {
      nest.output.push_back(d);
    } else if (keep) {
      nest.output.push_back(static_cast<int>(nest.loops.size()));
      nest.loops.push_back(fmt::format("d{} (kept)", d));
    }
  }
  nest.whole.assign(nest.loops.size(), false);
  return nest;
}
}  // namespace

const ShardingRule kReduceRule{reduce_nest};

}  // namespace sf
