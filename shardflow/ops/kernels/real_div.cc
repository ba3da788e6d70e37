// RealDiv(a, b): a / b element-wise, f32, both inputs of one shape — MindSpore's RealDiv
// without broadcasting. Used by the gradient of AllReduce prod (AllReduce(dout * out) / x).
// grad: da = dout / b, db = -dout * out / b (out = a / b is the node itself).
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
TypeInfo infer_real_div(const Node& n, const std::vector<const Node*>& in) {
  SF_ENFORCE(in[0]->dtype == DType::kF32 && in[1]->dtype == DType::kF32 && in[0]->shape == in[1]->shape, ShapeError,
             "{}: inputs must be f32 of the same shape, got {}{} and {}{}", node_label(n), dtype_name(in[0]->dtype),
             brief_shape(in[0]->shape), dtype_name(in[1]->dtype), brief_shape(in[1]->shape));
  return {in[0]->shape, DType::kF32};
}

void forward_real_div(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  const float* a = in[0].f32();
  const float* b = in[1].f32();
  float* o = out.f32();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = a[i] / b[i];
}

std::vector<int> grad_real_div(GradContext& ctx, const Node& fwd, int dout) {
  const int b = fwd.inputs[1];
  const int da = ctx.wants(0) ? ctx.emit("RealDiv", {dout, b}) : -1;
  int db = -1;
  if (ctx.wants(1)) {
    const int neg = ctx.emit("Mul", {dout, ctx.emit("Fill", {}, {{"shape", Shape{}}, {"value", -1.0}})});
    db = ctx.emit("RealDiv", {ctx.emit("Mul", {neg, fwd.id}), b});
  }
  return {da, db};
}
}  // namespace

void register_real_div_ops(OpRegistry& r) {
  r.add({.name = "RealDiv", .arity = 2, .infer = infer_real_div, .forward = forward_real_div, .grad = grad_real_div});
}

}  // namespace sf
