// MatMul's sharding rule. Loops m (rows), k (reduce), n (columns): x is (m,k), or (k,m) with
// transpose_a; w is (k,n), or (n,k) with transpose_b; the output is (m,n). A tuple strategy is
// written over the inputs' stored dims, so ((a,b),(b,c)) without transposes and ((b,a),(c,b))
// with both give device matrix (a,b,c) with x on axes (0,1) and w on (1,2). A split of k
// leaves each rank a partial sum: AllReduce resolves it, or ReduceScatter when out_strategy
// asks for the output split (seed 001).
#include <shardflow/parallel/sharding/sharding_rule.h>

namespace sf {

namespace {
constexpr int kM = 0, kK = 1, kN = 2;

LoopNest matmul_nest(const Node& node, const std::vector<Shape>&) {
  const bool ta = node.attrs.get_bool("transpose_a"), tb = node.attrs.get_bool("transpose_b");
  LoopNest nest;
  nest.loops = {"m (rows)", "k (reduce)", "n (columns)"};
  nest.inputs = {ta ? std::vector<int>{kK, kM} : std::vector<int>{kM, kK},
                 tb ? std::vector<int>{kN, kK} : std::vector<int>{kK, kN}};
  nest.output = {kM, kN};
  nest.whole = {false, false, false};
  return nest;
}
}  // namespace

const ShardingRule kMatMulRule{matmul_nest};

}  // namespace sf
