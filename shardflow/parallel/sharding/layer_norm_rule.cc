// LayerNorm's sharding rules (ops/kernels/layer_norm.cc), one loop per dim of x:
//   - the dims from begin_norm_axis on are whole loops: each row's mean and variance need the
//     entire row, so a strategy that splits the hidden dim gets it gathered before the op
//     (reducing the statistics across the shards instead would save that gather, as for
//     SoftmaxCrossEntropy's classes);
//   - the leading (batch, sequence) loops split freely, and gamma and beta, whose dims are x's
//     loops from begin_params_axis on, are then replicated over them, as BiasAdd's bias is under
//     a batch split. Their gradients are each rank's rows' share of a sum: the gradient's
//     AllReduce over the parameter's replicas completes it (train/semi_auto_step.h).
// LayerNormGrad(dout, x, gamma) has LayerNorm's loops (dout and x on x's, gamma on its own);
// LayerNormGammaGrad(dout, x) reduces the loops before begin_params_axis, so a split of them
// leaves its output partial (MatMul's k loop), resolved by AllReduce like any partial sum.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
int axis_of(const Node& node, const char* name, int rank) {
  const int64_t a = node.attrs.get_int(name, -1);  // shape inference checked the range
  return static_cast<int>(a < 0 ? a + rank : a);
}

// x's loops, whole from begin_norm_axis on; `params` gets gamma's loops.
LoopNest x_loops(const Node& node, const Shape& x, std::vector<int>& xs, std::vector<int>& params) {
  const int r = static_cast<int>(x.size());
  const int norm = axis_of(node, "begin_norm_axis", r), first_param = axis_of(node, "begin_params_axis", r);
  LoopNest nest;
  for (int d = 0; d < r; ++d) {
    nest.loops.push_back(d >= norm ? fmt::format("d{} (normalized)", d) : fmt::format("d{}", d));
    nest.whole.push_back(d >= norm);
    xs.push_back(d);
    if (d >= first_param) params.push_back(d);
  }
  return nest;
}

LoopNest layer_norm_nest(const Node& node, const std::vector<Shape>& inputs) {
  std::vector<int> x, params;
  const bool grad = node.op == "LayerNormGrad";
  LoopNest nest = x_loops(node, inputs[grad ? 1 : 0], x, params);
  nest.inputs = grad ? std::vector<std::vector<int>>{x, x, params} : std::vector<std::vector<int>>{x, params, params};
  nest.output = x;
  return nest;
}

LoopNest layer_norm_gamma_grad_nest(const Node& node, const std::vector<Shape>& inputs) {
  std::vector<int> x, params;
  LoopNest nest = x_loops(node, inputs[1], x, params);
  nest.inputs = {x, x};
  nest.output = params;
  return nest;
}
}  // namespace

const ShardingRule kLayerNormRule{layer_norm_nest};
const ShardingRule kLayerNormGammaGradRule{layer_norm_gamma_grad_nest};

}  // namespace sf
