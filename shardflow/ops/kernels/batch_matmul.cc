// BatchMatMul (MindSpore ops.BatchMatMul): one matrix product per index of the leading (batch)
// dims, attention's Q K^T and its weights times V:
//   a (..., m, k), or (..., k, m) with transpose_a; b (..., k, n), or (..., n, k) with
//   transpose_b; out (..., m, n). Both inputs have the same rank >= 3 and the same batch dims
//   (no broadcasting between them: reshape or tile first).
// Gradients as MatMul's, per batch: with C = op(A) op(B), dA = dC op(B)^T (transposed back if A
// was), dB likewise, each a BatchMatMul with the transposes chosen so that nothing is copied.
// cblas_sgemm does each product, single-threaded per call (ops/kernels/matmul.cc says why).
#include <cblas.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
struct BmmDims {
  int64_t batch = 1, m = 0, k = 0, n = 0;
};

BmmDims bmm_dims(const Node& node, const Shape& a, const Shape& b) {
  const bool ta = node.attrs.get_bool("transpose_a"), tb = node.attrs.get_bool("transpose_b");
  SF_ENFORCE(a.size() >= 3 && a.size() == b.size(), ShapeError,
             "{}: inputs must have the same rank >= 3, got {} and {}", node_label(node), brief_shape(a),
             brief_shape(b));
  const size_t r = a.size();
  BmmDims d;
  for (size_t i = 0; i + 2 < r; ++i) {
    SF_ENFORCE(a[i] == b[i], ShapeError, "{}: batch dims differ: {} and {} (dim {})", node_label(node), brief_shape(a),
               brief_shape(b), i);
    d.batch *= a[i];
  }
  d.m = ta ? a[r - 1] : a[r - 2];
  d.k = ta ? a[r - 2] : a[r - 1];
  const int64_t kb = tb ? b[r - 1] : b[r - 2];
  d.n = tb ? b[r - 2] : b[r - 1];
  SF_ENFORCE(d.k == kb, ShapeError, "{}: inner dimensions differ: {} {} x {} {} (transpose_a={}, transpose_b={})",
             node_label(node), brief_shape(a), d.k, brief_shape(b), kb, ta, tb);
  return d;
}

TypeInfo infer_bmm(const Node& n, const std::vector<const Node*>& in) {
  SF_ENFORCE(in[0]->dtype == DType::kF32 && in[1]->dtype == DType::kF32, ShapeError,
             "{}: inputs must be f32, got {} and {}", node_label(n), dtype_name(in[0]->dtype),
             dtype_name(in[1]->dtype));
  const BmmDims d = bmm_dims(n, in[0]->shape, in[1]->shape);
  Shape out(in[0]->shape.begin(), in[0]->shape.end() - 2);
  out.push_back(d.m);
  out.push_back(d.n);
  return {out, DType::kF32};
}

void forward_bmm(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const bool ta = n.attrs.get_bool("transpose_a"), tb = n.attrs.get_bool("transpose_b");
  const BmmDims d = bmm_dims(n, in[0].shape(), in[1].shape());
  if (out.numel() == 0) return;
  if (d.k == 0) {
    out.zero();
    return;
  }
  const int64_t lda = in[0].shape().back(), ldb = in[1].shape().back();
  const float* a = in[0].f32();
  const float* b = in[1].f32();
  float* o = out.f32();
  for (int64_t i = 0; i < d.batch; ++i)
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, d.m, d.n, d.k, 1.0f,
                a + i * d.m * d.k, lda, b + i * d.k * d.n, ldb, 0.0f, o + i * d.m * d.n, d.n);
}

std::vector<int> grad_bmm(GradContext& ctx, const Node& fwd, int dout) {
  const bool ta = fwd.attrs.get_bool("transpose_a"), tb = fwd.attrs.get_bool("transpose_b");
  const int a = fwd.inputs[0], b = fwd.inputs[1];
  auto bmm = [&](int x, int y, bool tx, bool ty) {
    return ctx.emit("BatchMatMul", {x, y}, {{"transpose_a", int64_t{tx}}, {"transpose_b", int64_t{ty}}});
  };
  const int da = !ctx.wants(0) ? -1 : ta ? bmm(b, dout, tb, true) : bmm(dout, b, false, !tb);
  const int db = !ctx.wants(1) ? -1 : tb ? bmm(dout, a, true, ta) : bmm(a, dout, !ta, false);
  return {da, db};
}
}  // namespace

void register_batch_matmul_ops(OpRegistry& r) {
  r.add({.name = "BatchMatMul", .arity = 2, .infer = infer_bmm, .forward = forward_bmm, .grad = grad_bmm});
}

}  // namespace sf
