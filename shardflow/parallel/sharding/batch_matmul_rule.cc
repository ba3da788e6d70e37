// BatchMatMul's sharding rule: MatMul's loops m (rows), k (reduce), n (columns) after one loop
// per batch dim. A tuple strategy follows each input's stored dims, as MatMul's does: a (B, m, k)
// and b (B, k, n) under ((2,1,4),(2,4,1)) split the batch in 2 and k in 4, so each rank's product
// is a partial sum over its k block, resolved by AllReduce (or ReduceScatter under an
// out_strategy). The batch loops (attention's batch and heads) split with no communication.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest batch_matmul_nest(const Node& node, const std::vector<Shape>& inputs) {
  const bool ta = node.attrs.get_bool("transpose_a"), tb = node.attrs.get_bool("transpose_b");
  const int batch = static_cast<int>(inputs[0].size()) - 2;  // shape inference checked rank >= 3
  const int m = batch, k = batch + 1, n = batch + 2;
  LoopNest nest;
  std::vector<int> lead;
  for (int d = 0; d < batch; ++d) {
    nest.loops.push_back(fmt::format("b{} (batch)", d));
    lead.push_back(d);
  }
  nest.loops.insert(nest.loops.end(), {"m (rows)", "k (reduce)", "n (columns)"});
  auto with = [&lead](int x, int y) {
    std::vector<int> dims = lead;
    dims.push_back(x);
    dims.push_back(y);
    return dims;
  };
  nest.inputs = {ta ? with(k, m) : with(m, k), tb ? with(n, k) : with(k, n)};
  nest.output = with(m, n);
  nest.whole.assign(nest.loops.size(), false);
  return nest;
}
}  // namespace

const ShardingRule kBatchMatMulRule{batch_matmul_nest};

}  // namespace sf
