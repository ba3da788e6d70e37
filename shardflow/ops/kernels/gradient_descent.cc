// In-place SGD steps, so that a training step's parameter update runs inside the dataflow
// (MindSpore's ApplyGradientDescent), as soon as its gradient is ready:
//   ApplyGradientDescent(var, delta, control...)          var -= alpha * delta
//     with attr delta_offset: delta is a flat buffer holding var's gradient at that element
//     offset (a bucket of gradients reduced by one AllReduce), read in place, not copied out
//   MatMulGradientDescent(var, a, b, control...)           var -= alpha * op(a) op(b)
// The second fuses a weight gradient's GEMM with its update (sgemm with beta = 1): the
// gradient is never stored and the parameter is read and written once. Optional attrs
// col_begin/col_end restrict it to a block of var's columns, so that updates of disjoint
// blocks of one parameter can run concurrently.
// Trailing `num_control` inputs only order the update after every other reader of var.
#include <cblas.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/fault_point.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
void check_controls(const Node& n, size_t data_inputs) {
  SF_ENFORCE(n.inputs.size() == data_inputs + static_cast<size_t>(n.attrs.get_int("num_control")), InvalidArgument,
             "{}: {} inputs, expected {} plus num_control={}", node_label(n), n.inputs.size(), data_inputs,
             n.attrs.get_int("num_control"));
}

TypeInfo infer_apply(const Node& n, const std::vector<const Node*>& in) {
  check_controls(n, 2);
  SF_ENFORCE(in[0]->op == "Parameter", InvalidArgument, "{}: var must be a Parameter, got {}", node_label(n),
             node_label(*in[0]));
  if (n.attrs.has("delta_offset")) {
    const int64_t off = n.attrs.get_int("delta_offset");
    SF_ENFORCE(in[1]->dtype == DType::kF32 && off >= 0 && off + numel(in[0]->shape) <= numel(in[1]->shape), ShapeError,
               "{}: delta {} has no {} elements at offset {} for var {}", node_label(n), brief_shape(in[1]->shape),
               numel(in[0]->shape), off, brief_shape(in[0]->shape));
    return {in[0]->shape, DType::kF32};
  }
  SF_ENFORCE(in[1]->shape == in[0]->shape && in[1]->dtype == DType::kF32, ShapeError,
             "{}: delta {} does not match var {}", node_label(n), brief_shape(in[1]->shape), brief_shape(in[0]->shape));
  return {in[0]->shape, DType::kF32};
}

void apply(const Node& n, const std::vector<Tensor>& in, Tensor& var) {
  fault_point("optimizer");
  const float alpha = static_cast<float>(n.attrs.get_float("alpha"));
  float* p = var.f32();
  const float* d = in[1].f32() + n.attrs.get_int("delta_offset", 0);
  for (int64_t i = 0; i < var.numel(); ++i) p[i] -= alpha * d[i];
}

TypeInfo infer_matmul(const Node& n, const std::vector<const Node*>& in) {
  check_controls(n, 3);
  SF_ENFORCE(in[0]->op == "Parameter", InvalidArgument, "{}: var must be a Parameter, got {}", node_label(n),
             node_label(*in[0]));
  const bool ta = n.attrs.get_bool("transpose_a"), tb = n.attrs.get_bool("transpose_b");
  const Shape &a = in[1]->shape, &b = in[2]->shape, &v = in[0]->shape;
  SF_ENFORCE(a.size() == 2 && b.size() == 2 && v.size() == 2, ShapeError, "{}: operands must be 2-D", node_label(n));
  const int64_t m = ta ? a[1] : a[0], ka = ta ? a[0] : a[1], kb = tb ? b[1] : b[0], nn = tb ? b[0] : b[1];
  SF_ENFORCE(ka == kb && v[0] == m && v[1] == nn, ShapeError, "{}: op(a) {} x op(b) {} does not give var {}",
             node_label(n), brief_shape(a), brief_shape(b), brief_shape(v));
  const int64_t c0 = n.attrs.get_int("col_begin", 0), c1 = n.attrs.get_int("col_end", nn);
  SF_ENFORCE(0 <= c0 && c0 <= c1 && c1 <= nn, InvalidArgument, "{}: columns [{}, {}) out of range for var {}",
             node_label(n), c0, c1, brief_shape(v));
  return {v, DType::kF32};
}

void matmul_update(const Node& n, const std::vector<Tensor>& in, Tensor& var) {
  fault_point("optimizer");
  const bool ta = n.attrs.get_bool("transpose_a"), tb = n.attrs.get_bool("transpose_b");
  const Tensor &a = in[1], &b = in[2];
  const int64_t m = var.dim(0), ldc = var.dim(1), k = ta ? a.dim(0) : a.dim(1);
  const int64_t c0 = n.attrs.get_int("col_begin", 0), c1 = n.attrs.get_int("col_end", ldc);
  if (m == 0 || c1 == c0 || k == 0) return;
  // Columns c0..c1 of op(b) start at column c0 of b, or at row c0 of b when transposed.
  const float* bp = b.f32() + (tb ? c0 * b.dim(1) : c0);
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, c1 - c0, k,
              -static_cast<float>(n.attrs.get_float("alpha")), a.f32(), a.dim(1), bp, b.dim(1), 1.0f, var.f32() + c0,
              ldc);
}
}  // namespace

void register_gradient_descent_ops(OpRegistry& r) {
  r.add({.name = "ApplyGradientDescent", .arity = -1, .infer = infer_apply, .forward = apply, .grad = {},
         .inplace_input = 0});
  r.add({.name = "MatMulGradientDescent", .arity = -1, .infer = infer_matmul, .forward = matmul_update, .grad = {},
         .inplace_input = 0});
}

}  // namespace sf
