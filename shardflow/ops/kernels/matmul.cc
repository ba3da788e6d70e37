// MatMul: out[M,N] = op(a) @ op(b), op = transpose when transpose_a / transpose_b is set.
// Shapes: a (M,K) or (K,M); b (K,N) or (N,K). cblas_sgemm does the work, single-threaded per
// call: parallelism comes from actors running independent ops, and OpenBLAS is not safe
// with several multi-threaded callers at once.
#include <cblas.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
struct Dims {
  int64_t m, k, n;
};

Dims dims_of(const Node& n, const Shape& a, const Shape& b) {
  const bool ta = n.attrs.get_bool("transpose_a"), tb = n.attrs.get_bool("transpose_b");
  SF_ENFORCE(a.size() == 2 && b.size() == 2, ShapeError, "{}: inputs must be 2-D, got {} and {}", node_label(n),
             brief_shape(a), brief_shape(b));
  const int64_t m = ta ? a[1] : a[0], ka = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0], nn = tb ? b[0] : b[1];
  SF_ENFORCE(ka == kb, ShapeError,
             "{}: inner dimensions differ: {} {} x {} {} (transpose_a={}, transpose_b={})", node_label(n),
             brief_shape(a), ka, brief_shape(b), kb, ta, tb);
  return {m, ka, nn};
}

TypeInfo infer(const Node& n, const std::vector<const Node*>& in) {
  SF_ENFORCE(in[0]->dtype == DType::kF32 && in[1]->dtype == DType::kF32, ShapeError, "{}: inputs must be f32",
             node_label(n));
  Dims d = dims_of(n, in[0]->shape, in[1]->shape);
  return {{d.m, d.n}, DType::kF32};
}

void forward(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const bool ta = n.attrs.get_bool("transpose_a"), tb = n.attrs.get_bool("transpose_b");
  Dims d = dims_of(n, in[0].shape(), in[1].shape());
  if (d.m == 0 || d.n == 0) return;
  if (d.k == 0) {
    out.zero();
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, d.m, d.n, d.k, 1.0f,
              in[0].f32(), in[0].dim(1), in[1].f32(), in[1].dim(1), 0.0f, out.f32(), d.n);
}

// With C = op(A) op(B):  dA = dC op(B)^T (transposed back if A was), dB likewise.
std::vector<int> grad(GradContext& ctx, const Node& fwd, int dout) {
  const bool ta = fwd.attrs.get_bool("transpose_a"), tb = fwd.attrs.get_bool("transpose_b");
  const int a = fwd.inputs[0], b = fwd.inputs[1];
  int da = -1, db = -1;
  auto mm = [&](int x, int y, bool tx, bool ty) {
    return ctx.emit("MatMul", {x, y}, {{"transpose_a", int64_t{tx}}, {"transpose_b", int64_t{ty}}});
  };
  if (ctx.wants(0)) da = ta ? mm(b, dout, tb, true) : mm(dout, b, false, !tb);
  if (ctx.wants(1)) db = tb ? mm(dout, a, true, ta) : mm(a, dout, !ta, false);
  return {da, db};
}
}  // namespace

void register_matmul_ops(OpRegistry& r) {
  r.add({.name = "MatMul", .arity = 2, .infer = infer, .forward = forward, .grad = grad});
}

}  // namespace sf
