// 2-D pooling over NCHW f32, square windows:
//   MaxPool(x (N,C,H,W)) / AvgPool(x)  attrs kernel, stride (default kernel), pad (default 0)
//     -> (N,C,OH,OW), OH = (H + 2 pad - kernel) / stride + 1 rounded down, as PyTorch with
//     ceil_mode off; pad is at most kernel / 2 (PyTorch's rule), so no window is all padding.
//   MaxPoolGrad(dout, x)  same attrs -> dx: each dout goes to the first maximum of its window
//     (row-major within the window, so ties are broken the same way every run).
//   AvgPoolGrad(dout)     same attrs plus input_size (x's shape) -> dx.
// MaxPool ignores padding (it is -inf). AvgPool counts it: every window divides by
// kernel^2, PyTorch's default count_include_pad=True (the padded window never runs past the
// padding in floor mode, so that is always the full window). Global average pooling is
// ReduceMean over (2, 3) (GraphBuilder::global_avg_pool).
//
// Each kernel walks the output and clips its window to the image once per output element;
// the window loops are plain loops with no calls.
#include <algorithm>
#include <limits>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

struct PoolGeom {
  int64_t planes, h, w;  // planes = N * C
  int64_t k, stride, pad;
  int64_t oh, ow;
  // The window of output (i, j) clipped to the image: rows [h0, h1), cols [w0, w1).
  int64_t h0(int64_t i) const { return std::max<int64_t>(i * stride - pad, 0); }
  int64_t h1(int64_t i) const { return std::min(i * stride - pad + k, h); }
  int64_t w0(int64_t j) const { return std::max<int64_t>(j * stride - pad, 0); }
  int64_t w1(int64_t j) const { return std::min(j * stride - pad + k, w); }
};

PoolGeom geometry(const Node& n, const Shape& x) {
  SF_ENFORCE(x.size() == 4, ShapeError, "{}: x must be 4-D (NCHW), got {}", node_label(n), brief_shape(x));
  PoolGeom g{};
  g.planes = x[0] * x[1];
  g.h = x[2];
  g.w = x[3];
  g.k = n.attrs.get_int("kernel");
  g.stride = n.attrs.get_int("stride", g.k);
  g.pad = n.attrs.get_int("pad", 0);
  SF_ENFORCE(g.k >= 1 && g.stride >= 1 && g.pad >= 0 && 2 * g.pad <= g.k, InvalidArgument,
             "{}: need kernel >= 1, stride >= 1, 0 <= pad <= kernel / 2; got kernel {} stride {} pad {}",
             node_label(n), g.k, g.stride, g.pad);
  SF_ENFORCE(g.h + 2 * g.pad >= g.k && g.w + 2 * g.pad >= g.k, ShapeError,
             "{}: kernel {} does not fit input {} with pad {}", node_label(n), g.k, brief_shape(x), g.pad);
  g.oh = (g.h + 2 * g.pad - g.k) / g.stride + 1;
  g.ow = (g.w + 2 * g.pad - g.k) / g.stride + 1;
  return g;
}

Shape pooled_shape(const Shape& x, const PoolGeom& g) { return {x[0], x[1], g.oh, g.ow}; }

void check_f32(const Node& n, const Node& v, const char* what) {
  SF_ENFORCE(v.dtype == DType::kF32, ShapeError, "{}: {} must be f32, got {}{}", node_label(n), what,
             dtype_name(v.dtype), brief_shape(v.shape));
}

TypeInfo infer_pool(const Node& n, const std::vector<const Node*>& in) {
  check_f32(n, *in[0], "x");
  return {pooled_shape(in[0]->shape, geometry(n, in[0]->shape)), DType::kF32};
}

// Offset, within its plane, of the first maximum of window (i, j).
int64_t argmax_in_window(const PoolGeom& g, const float* plane, int64_t i, int64_t j) {
  const int64_t r0 = g.h0(i), r1 = g.h1(i), c0 = g.w0(j), c1 = g.w1(j);
  int64_t best = r0 * g.w + c0;
  float m = plane[best];
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c)
      if (plane[r * g.w + c] > m) {
        m = plane[r * g.w + c];
        best = r * g.w + c;
      }
  return best;
}

void forward_max(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const PoolGeom g = geometry(n, in[0].shape());
  const float* x = in[0].f32();
  float* o = out.f32();
  for (int64_t p = 0; p < g.planes; ++p) {
    const float* plane = x + p * g.h * g.w;
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j, ++o) *o = plane[argmax_in_window(g, plane, i, j)];
  }
}

void forward_avg(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const PoolGeom g = geometry(n, in[0].shape());
  const float scale = 1.0f / static_cast<float>(g.k * g.k);
  const float* x = in[0].f32();
  float* o = out.f32();
  for (int64_t p = 0; p < g.planes; ++p) {
    const float* plane = x + p * g.h * g.w;
    for (int64_t i = 0; i < g.oh; ++i) {
      const int64_t r0 = g.h0(i), r1 = g.h1(i);
      for (int64_t j = 0; j < g.ow; ++j, ++o) {
        const int64_t c0 = g.w0(j), c1 = g.w1(j);
        float s = 0.0f;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) s += plane[r * g.w + c];
        *o = s * scale;
      }
    }
  }
}

Attrs pool_attrs(const Node& fwd) {
  const int64_t k = fwd.attrs.get_int("kernel");
  return {{"kernel", k}, {"stride", fwd.attrs.get_int("stride", k)}, {"pad", fwd.attrs.get_int("pad", 0)}};
}

std::vector<int> grad_max(GradContext& ctx, const Node& fwd, int dout) {
  return {ctx.emit("MaxPoolGrad", {dout, fwd.inputs[0]}, pool_attrs(fwd))};
}

std::vector<int> grad_avg(GradContext& ctx, const Node& fwd, int dout) {
  Attrs a = pool_attrs(fwd);
  a.set("input_size", ctx.node(fwd.inputs[0]).shape);
  return {ctx.emit("AvgPoolGrad", {dout}, std::move(a))};
}

// ---- MaxPoolGrad(dout, x) ----

TypeInfo infer_max_grad(const Node& n, const std::vector<const Node*>& in) {
  check_f32(n, *in[0], "dout");
  check_f32(n, *in[1], "x");
  const Shape want = pooled_shape(in[1]->shape, geometry(n, in[1]->shape));
  SF_ENFORCE(in[0]->shape == want, ShapeError, "{}: dout is {}, the pooled x {} is {}", node_label(n),
             brief_shape(in[0]->shape), brief_shape(in[1]->shape), brief_shape(want));
  return {in[1]->shape, DType::kF32};
}

void forward_max_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const PoolGeom g = geometry(n, in[1].shape());
  out.zero();
  const float* d = in[0].f32();
  const float* x = in[1].f32();
  float* dx = out.f32();
  for (int64_t p = 0; p < g.planes; ++p) {
    const float* plane = x + p * g.h * g.w;
    float* dplane = dx + p * g.h * g.w;
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j, ++d) dplane[argmax_in_window(g, plane, i, j)] += *d;
  }
}

// ---- AvgPoolGrad(dout) ----

TypeInfo infer_avg_grad(const Node& n, const std::vector<const Node*>& in) {
  check_f32(n, *in[0], "dout");
  const Shape x = n.attrs.get_ints("input_size");
  const Shape want = pooled_shape(x, geometry(n, x));
  SF_ENFORCE(in[0]->shape == want, ShapeError, "{}: dout is {}, the pooled input_size {} is {}", node_label(n),
             brief_shape(in[0]->shape), brief_shape(x), brief_shape(want));
  return {x, DType::kF32};
}

void forward_avg_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const PoolGeom g = geometry(n, out.shape());
  const float scale = 1.0f / static_cast<float>(g.k * g.k);
  out.zero();
  const float* d = in[0].f32();
  float* dx = out.f32();
  for (int64_t p = 0; p < g.planes; ++p) {
    float* dplane = dx + p * g.h * g.w;
    for (int64_t i = 0; i < g.oh; ++i) {
      const int64_t r0 = g.h0(i), r1 = g.h1(i);
      for (int64_t j = 0; j < g.ow; ++j, ++d) {
        const int64_t c0 = g.w0(j), c1 = g.w1(j);
        const float v = *d * scale;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) dplane[r * g.w + c] += v;
      }
    }
  }
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  r.add({.name = "MaxPool", .arity = 1, .infer = infer_pool, .forward = forward_max, .grad = grad_max});
  r.add({.name = "AvgPool", .arity = 1, .infer = infer_pool, .forward = forward_avg, .grad = grad_avg});
  r.add({.name = "MaxPoolGrad", .arity = 2, .infer = infer_max_grad, .forward = forward_max_grad, .grad = {}});
  r.add({.name = "AvgPoolGrad", .arity = 1, .infer = infer_avg_grad, .forward = forward_avg_grad, .grad = {}});
}

}  // namespace sf
