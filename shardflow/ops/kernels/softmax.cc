// Softmax along one axis, attention's normalisation (MindSpore ops.Softmax):
//
//   Softmax(x)  attr axis (-1; negatives count from the end)
//     y = exp(x - max) / sum(exp(x - max)) over the axis; subtracting the row's max keeps exp
//     from overflowing and changes nothing else.
//   SoftmaxGrad(dout, y)  the same attr: dx = y * (dout - sum(dout * y)) over the axis
// The gradient takes the forward's output (the node itself), as ReluGrad does: it is all the
// formula needs, so the backward keeps no copy of x.
//
// x is viewed as (outer, n, inner) with n the axis. The last axis (inner == 1, the attention
// case) is a contiguous row per softmax; any other axis is handled a slab of `inner` columns at
// a time, each loop running along the contiguous inner dim so that it vectorises too.
#include <cmath>
#include <vector>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/lane_reduce.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

struct AxisDims {
  int64_t outer = 1, n = 1, inner = 1;
};

AxisDims axis_dims(const Node& node, const Shape& s) {
  const int64_t r = static_cast<int64_t>(s.size());
  const int64_t a = node.attrs.get_int("axis", -1);
  SF_ENFORCE(a >= -r && a < r, ShapeError, "{}: axis {} out of range for input {}", node_label(node), a,
             brief_shape(s));
  const int64_t ax = a < 0 ? a + r : a;
  AxisDims d;
  for (int64_t i = 0; i < ax; ++i) d.outer *= s[i];
  d.n = s[ax];
  for (int64_t i = ax + 1; i < r; ++i) d.inner *= s[i];
  return d;
}

TypeInfo infer_softmax(const Node& n, const std::vector<const Node*>& in) {
  const Node& x = *in[0];
  SF_ENFORCE(x.dtype == DType::kF32 && !x.shape.empty(), ShapeError, "{}: input must be f32 of rank >= 1, got {}{}",
             node_label(n), dtype_name(x.dtype), brief_shape(x.shape));
  axis_dims(n, x.shape);
  return {x.shape, DType::kF32};
}

// One contiguous softmax row of length n.
void softmax_row(const float* __restrict x, float* __restrict y, int64_t n) {
  const float m = lane_max(x, n);
  for (int64_t k = 0; k < n; ++k) y[k] = std::exp(x[k] - m);
  const float inv = static_cast<float>(1.0 / lane_sum(n, [y](int64_t k) { return y[k]; }));
  for (int64_t k = 0; k < n; ++k) y[k] *= inv;
}

void forward_softmax(const Node& node, const std::vector<Tensor>& in, Tensor& out) {
  const AxisDims d = axis_dims(node, in[0].shape());
  if (out.numel() == 0) return;
  const float* x = in[0].f32();
  float* y = out.f32();
  if (d.inner == 1) {
    for (int64_t r = 0; r < d.outer; ++r) softmax_row(x + r * d.n, y + r * d.n, d.n);
    return;
  }
  // A slab (n, inner): the max and the sum per column, accumulated row by row along inner.
  std::vector<float> m(d.inner), s(d.inner);
  for (int64_t r = 0; r < d.outer; ++r) {
    const float* __restrict xs = x + r * d.n * d.inner;
    float* __restrict ys = y + r * d.n * d.inner;
    for (int64_t c = 0; c < d.inner; ++c) m[c] = xs[c];
    for (int64_t k = 1; k < d.n; ++k)
      for (int64_t c = 0; c < d.inner; ++c) m[c] = xs[k * d.inner + c] > m[c] ? xs[k * d.inner + c] : m[c];
    for (int64_t c = 0; c < d.inner; ++c) s[c] = 0.0f;
    for (int64_t k = 0; k < d.n; ++k)
      for (int64_t c = 0; c < d.inner; ++c) {
        const float e = std::exp(xs[k * d.inner + c] - m[c]);
        ys[k * d.inner + c] = e;
        s[c] += e;
      }
    for (int64_t c = 0; c < d.inner; ++c) s[c] = 1.0f / s[c];
    for (int64_t k = 0; k < d.n; ++k)
      for (int64_t c = 0; c < d.inner; ++c) ys[k * d.inner + c] *= s[c];
  }
}

TypeInfo infer_softmax_grad(const Node& n, const std::vector<const Node*>& in) {
  const Node& dout = *in[0];
  const Node& y = *in[1];
  SF_ENFORCE(dout.dtype == DType::kF32 && y.dtype == DType::kF32 && dout.shape == y.shape && !y.shape.empty(),
             ShapeError, "{}: dout and y must be f32 of the same shape, rank >= 1, got {}{} and {}{}", node_label(n),
             dtype_name(dout.dtype), brief_shape(dout.shape), dtype_name(y.dtype), brief_shape(y.shape));
  axis_dims(n, y.shape);
  return {y.shape, DType::kF32};
}

void forward_softmax_grad(const Node& node, const std::vector<Tensor>& in, Tensor& out) {
  const AxisDims d = axis_dims(node, in[1].shape());
  if (out.numel() == 0) return;
  const float* g = in[0].f32();
  const float* y = in[1].f32();
  float* o = out.f32();
  if (d.inner == 1) {
    for (int64_t r = 0; r < d.outer; ++r) {
      const float* __restrict gr = g + r * d.n;
      const float* __restrict yr = y + r * d.n;
      float* __restrict orow = o + r * d.n;
      const float dot = static_cast<float>(lane_sum(d.n, [gr, yr](int64_t k) { return gr[k] * yr[k]; }));
      for (int64_t k = 0; k < d.n; ++k) orow[k] = yr[k] * (gr[k] - dot);
    }
    return;
  }
  std::vector<float> dot(d.inner);
  for (int64_t r = 0; r < d.outer; ++r) {
    const int64_t off = r * d.n * d.inner;
    const float* __restrict gs = g + off;
    const float* __restrict ys = y + off;
    float* __restrict os = o + off;
    for (int64_t c = 0; c < d.inner; ++c) dot[c] = 0.0f;
    for (int64_t k = 0; k < d.n; ++k)
      for (int64_t c = 0; c < d.inner; ++c) dot[c] += gs[k * d.inner + c] * ys[k * d.inner + c];
    for (int64_t k = 0; k < d.n; ++k)
      for (int64_t c = 0; c < d.inner; ++c) os[k * d.inner + c] = ys[k * d.inner + c] * (gs[k * d.inner + c] - dot[c]);
  }
}

std::vector<int> grad_softmax(GradContext& ctx, const Node& fwd, int dout) {
  return {ctx.emit("SoftmaxGrad", {dout, fwd.id}, {{"axis", fwd.attrs.get_int("axis", -1)}})};
}
}  // namespace

void register_softmax_ops(OpRegistry& r) {
  r.add({.name = "Softmax", .arity = 1, .infer = infer_softmax, .forward = forward_softmax, .grad = grad_softmax});
  r.add({.name = "SoftmaxGrad", .arity = 2, .infer = infer_softmax_grad, .forward = forward_softmax_grad, .grad = {}});
}

}  // namespace sf
