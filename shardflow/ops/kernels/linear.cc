// Linear: a dense layer's product on activations of any rank, y (..., n) = x (..., k) op(w),
// with op(w) = w^T for a weight stored (n, k) (transpose_b, the default: nn.Dense's layout) or
// w itself for one stored (k, n).
//
// Why not MatMul: MatMul is 2-D, so a transformer's (batch, sequence, hidden) activations would
// be reshaped to (batch * sequence, hidden) around every projection. A reshape that merges the
// batch and sequence dims keeps only a split of the leading one, so data parallel (batch) and
// sequence parallel (sequence) could not both stay split through it. Linear keeps every
// leading dim as a loop of its own (parallel/sharding/linear_rule.cc).
//
// The leading dims are contiguous, so the kernel is one cblas_sgemm over (prod(...), k), as
// MatMul's (single-threaded per call: ops/kernels/matmul.cc says why).
//
//   Linear(x, w) attr transpose_b (1)
//   LinearGradWeight(x, dout) attr transpose_b: w's gradient, the sum over every leading index
//     of dout^T x (shape (n, k)) or x^T dout (shape (k, n)).
// Gradients of Linear: dx = Linear(dout, w) with transpose_b flipped; dw = LinearGradWeight.
#include <cblas.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

bool transposed(const Node& n) { return n.attrs.get_int("transpose_b", 1) != 0; }

int64_t rows_of(const Shape& s) {
  int64_t m = 1;
  for (size_t d = 0; d + 1 < s.size(); ++d) m *= s[d];
  return m;
}

TypeInfo infer_linear(const Node& n, const std::vector<const Node*>& in) {
  const Node& x = *in[0];
  const Node& w = *in[1];
  SF_ENFORCE(x.dtype == DType::kF32 && w.dtype == DType::kF32, ShapeError, "{}: inputs must be f32", node_label(n));
  SF_ENFORCE(!x.shape.empty() && w.shape.size() == 2, ShapeError,
             "{}: x must have rank >= 1 and w rank 2, got {} and {}", node_label(n), brief_shape(x.shape),
             brief_shape(w.shape));
  const bool tb = transposed(n);
  const int64_t k = tb ? w.shape[1] : w.shape[0], out = tb ? w.shape[0] : w.shape[1];
  SF_ENFORCE(x.shape.back() == k, ShapeError, "{}: x's last dim {} differs from w's input dim {} (w {}, transpose_b={})",
             node_label(n), x.shape.back(), k, brief_shape(w.shape), tb);
  Shape s = x.shape;
  s.back() = out;
  return {s, DType::kF32};
}

void forward_linear(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const bool tb = transposed(n);
  const Shape& ws = in[1].shape();
  const int64_t m = rows_of(in[0].shape()), k = in[0].shape().back(), nn = tb ? ws[0] : ws[1];
  if (m == 0 || nn == 0) return;
  if (k == 0) {
    out.zero();
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, nn, k, 1.0f, in[0].f32(), k,
              in[1].f32(), ws[1], 0.0f, out.f32(), nn);
}

TypeInfo infer_grad_weight(const Node& n, const std::vector<const Node*>& in) {
  const Node& x = *in[0];
  const Node& dout = *in[1];
  SF_ENFORCE(x.dtype == DType::kF32 && dout.dtype == DType::kF32 && !x.shape.empty() &&
                 x.shape.size() == dout.shape.size() && rows_of(x.shape) == rows_of(dout.shape),
             ShapeError, "{}: x and dout must be f32 with the same leading dims, got {} and {}", node_label(n),
             brief_shape(x.shape), brief_shape(dout.shape));
  const int64_t k = x.shape.back(), nn = dout.shape.back();
  return {transposed(n) ? Shape{nn, k} : Shape{k, nn}, DType::kF32};
}

void forward_grad_weight(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t m = rows_of(in[0].shape()), k = in[0].shape().back(), nn = in[1].shape().back();
  if (k == 0 || nn == 0) return;
  if (m == 0) {
    out.zero();
    return;
  }
  if (transposed(n))  // (n, k) = dout^T x
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nn, k, m, 1.0f, in[1].f32(), nn, in[0].f32(), k, 0.0f,
                out.f32(), k);
  else  // (k, n) = x^T dout
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, nn, m, 1.0f, in[0].f32(), k, in[1].f32(), nn, 0.0f,
                out.f32(), nn);
}

std::vector<int> grad_linear(GradContext& ctx, const Node& fwd, int dout) {
  const int64_t tb = transposed(fwd) ? 1 : 0;
  const int x = fwd.inputs[0], w = fwd.inputs[1];
  const int dx = ctx.wants(0) ? ctx.emit("Linear", {dout, w}, {{"transpose_b", int64_t{1 - tb}}}) : -1;
  const int dw = ctx.wants(1) ? ctx.emit("LinearGradWeight", {x, dout}, {{"transpose_b", tb}}) : -1;
  return {dx, dw};
}
}  // namespace

void register_linear_ops(OpRegistry& r) {
  r.add({.name = "Linear", .arity = 2, .infer = infer_linear, .forward = forward_linear, .grad = grad_linear});
  r.add({.name = "LinearGradWeight",
         .arity = 2,
         .infer = infer_grad_weight,
         .forward = forward_grad_weight,
         .grad = {}});
}

}  // namespace sf
