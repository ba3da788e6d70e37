// Conv2D and its two gradients, NCHW f32, as MindSpore names them:
//   Conv2D(x (N,C,H,W), w (O,C,KH,KW))                       -> (N,O,OH,OW)
//   Conv2DBackpropInput(dout (N,O,OH,OW), w)  attr input_size  -> dx (N,C,H,W)
//   Conv2DBackpropFilter(dout, x)             attr filter_size -> dw (O,C,KH,KW)
// Attrs of all three: stride (int, default 1) and pad (int, default 0, the same on every
// side); OH = (H + 2 pad - KH) / stride + 1, rounded down. dilation and group, if given, must
// be 1. The backprop ops take the shape they cannot infer as an attr: with stride 2, H = 27
// and H = 28 give the same OH.
//
// Each image is lowered to a GEMM through im2col: col (C*KH*KW, OH*OW) holds, in row
// (c, ki, kj), the input pixel under kernel tap (ki, kj) for every output position (0 where
// the tap falls on padding), so that out[n] (O, OH*OW) = w (O, C*KH*KW) @ col. The gradients
// are the transposed products: dcol = w^T @ dout[n] scattered back by col2im, and dw = sum
// over n of dout[n] @ col^T. A 1x1 kernel with stride 1 and no padding needs no im2col: col
// is the image itself. col is one Tensor::empty buffer per call, reused for every image (the
// storage cache hands it back warm). sgemm runs single-threaded per call (ops/blas.h).
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// Every size of one convolution.
struct ConvGeom {
  int64_t n, c, h, w;      // input
  int64_t o, kh, kw;       // filter (O, C, KH, KW)
  int64_t stride, pad;
  int64_t oh, ow;          // output spatial size
  int64_t col_rows() const { return c * kh * kw; }
  int64_t col_cols() const { return oh * ow; }
  // The image is its own col matrix.
  bool direct() const { return kh == 1 && kw == 1 && stride == 1 && pad == 0; }
};

ConvGeom geometry(const Node& n, const Shape& x, const Shape& w) {
  SF_ENFORCE(x.size() == 4 && w.size() == 4, ShapeError, "{}: x and w must be 4-D (NCHW, OCKhKw), got {} and {}",
             node_label(n), brief_shape(x), brief_shape(w));
  SF_ENFORCE(x[1] == w[1], ShapeError, "{}: x has {} channels, w expects {} (x {}, w {})", node_label(n), x[1], w[1],
             brief_shape(x), brief_shape(w));
  SF_ENFORCE(n.attrs.get_int("dilation", 1) == 1 && n.attrs.get_int("group", 1) == 1, InvalidArgument,
             "{}: only dilation 1 and group 1 are supported, got dilation {} group {}", node_label(n),
             n.attrs.get_int("dilation", 1), n.attrs.get_int("group", 1));
  ConvGeom g{x[0], x[1], x[2], x[3], w[0], w[2], w[3], n.attrs.get_int("stride", 1), n.attrs.get_int("pad", 0), 0, 0};
  SF_ENFORCE(g.stride >= 1 && g.pad >= 0, InvalidArgument, "{}: stride must be >= 1 and pad >= 0, got {} and {}",
             node_label(n), g.stride, g.pad);
  SF_ENFORCE(g.kh >= 1 && g.kw >= 1 && g.h + 2 * g.pad >= g.kh && g.w + 2 * g.pad >= g.kw, ShapeError,
             "{}: kernel {}x{} does not fit input {} with pad {}", node_label(n), g.kh, g.kw, brief_shape(x), g.pad);
  g.oh = (g.h + 2 * g.pad - g.kh) / g.stride + 1;
  g.ow = (g.w + 2 * g.pad - g.kw) / g.stride + 1;
  return g;
}

Shape output_shape(const ConvGeom& g) { return {g.n, g.o, g.oh, g.ow}; }

void check_f32(const Node& n, const std::vector<const Node*>& in) {
  for (const Node* i : in)
    SF_ENFORCE(i->dtype == DType::kF32, ShapeError, "{}: inputs must be f32, got {}{} ({})", node_label(n),
               dtype_name(i->dtype), brief_shape(i->shape), i->name);
}

// [ow_begin, ow_end): the output columns whose tap kj lands inside the image row.
struct ColRange {
  int64_t begin, end;
};

ColRange valid_cols(const ConvGeom& g, int64_t kj) {
  // iw = ow * stride - pad + kj must satisfy 0 <= iw < W.
  const int64_t lo = g.pad - kj;          // ow * stride >= lo
  const int64_t hi = g.w - 1 + g.pad - kj;  // ow * stride <= hi
  const int64_t begin = lo <= 0 ? 0 : (lo + g.stride - 1) / g.stride;
  const int64_t end = hi < 0 ? 0 : std::min(g.ow, hi / g.stride + 1);
  return {std::min(begin, end), end};
}

// col (C*KH*KW, OH*OW) from one image x (C, H, W).
void im2col(const ConvGeom& g, const float* __restrict x, float* __restrict col) {
  const int64_t s = g.stride;
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        float* row = col + ((c * g.kh + ki) * g.kw + kj) * g.col_cols();
        const ColRange r = valid_cols(g, kj);
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          float* dst = row + oh * g.ow;
          const int64_t ih = oh * s - g.pad + ki;
          if (ih < 0 || ih >= g.h) {
            std::fill(dst, dst + g.ow, 0.0f);
            continue;
          }
          const float* src = x + (c * g.h + ih) * g.w;  // pixel iw = ow * s + shift of this row
          const int64_t shift = kj - g.pad;
          std::fill(dst, dst + r.begin, 0.0f);
          if (s == 1) {
            std::memcpy(dst + r.begin, src + r.begin + shift, static_cast<size_t>(r.end - r.begin) * sizeof(float));
          } else {
            for (int64_t ow = r.begin; ow < r.end; ++ow) dst[ow] = src[ow * s + shift];
          }
          std::fill(dst + r.end, dst + g.ow, 0.0f);
        }
      }
}

// The adjoint of im2col: adds each col element onto the pixel it was read from (dx must be
// zeroed first; overlapping windows accumulate).
void col2im(const ConvGeom& g, const float* __restrict col, float* __restrict dx) {
  const int64_t s = g.stride;
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const float* row = col + ((c * g.kh + ki) * g.kw + kj) * g.col_cols();
        const ColRange r = valid_cols(g, kj);
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          const int64_t ih = oh * s - g.pad + ki;
          if (ih < 0 || ih >= g.h) continue;
          const float* src = row + oh * g.ow;
          float* dst = dx + (c * g.h + ih) * g.w;  // pixel iw = ow * s + shift of this row
          const int64_t shift = kj - g.pad;
          for (int64_t ow = r.begin; ow < r.end; ++ow) dst[ow * s + shift] += src[ow];
        }
      }
}

// ---- Conv2D ----

TypeInfo infer_conv(const Node& n, const std::vector<const Node*>& in) {
  check_f32(n, in);
  return {output_shape(geometry(n, in[0]->shape, in[1]->shape)), DType::kF32};
}

void forward_conv(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const ConvGeom g = geometry(n, in[0].shape(), in[1].shape());
  const int64_t k = g.col_rows(), cols = g.col_cols(), image = g.c * g.h * g.w;
  if (out.numel() == 0) return;
  if (k == 0) {  // no input channels: sgemm would not write the output
    out.zero();
    return;
  }
  Tensor col = g.direct() ? Tensor() : Tensor::empty({k, cols});
  const float* x = in[0].f32();
  const float* w = in[1].f32();
  float* o = out.f32();
  for (int64_t i = 0; i < g.n; ++i) {
    const float* src = x + i * image;
    if (!g.direct()) {
      im2col(g, src, col.f32());
      src = col.f32();
    }
    // out[i] (O, OH*OW) = w (O, K) @ col (K, OH*OW)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g.o, cols, k, 1.0f, w, k, src, cols, 0.0f,
                o + i * g.o * cols, cols);
  }
}

Attrs conv_attrs(const Node& fwd) {
  return {{"stride", fwd.attrs.get_int("stride", 1)}, {"pad", fwd.attrs.get_int("pad", 0)}};
}

std::vector<int> grad_conv(GradContext& ctx, const Node& fwd, int dout) {
  const int x = fwd.inputs[0], w = fwd.inputs[1];
  int dx = -1, dw = -1;
  if (ctx.wants(0)) {
    Attrs a = conv_attrs(fwd);
    a.set("input_size", ctx.node(x).shape);
    dx = ctx.emit("Conv2DBackpropInput", {dout, w}, std::move(a));
  }
  if (ctx.wants(1)) {
    Attrs a = conv_attrs(fwd);
    a.set("filter_size", ctx.node(w).shape);
    dw = ctx.emit("Conv2DBackpropFilter", {dout, x}, std::move(a));
  }
  return {dx, dw};
}

// ---- Conv2DBackpropInput(dout, w) ----

void check_dout(const Node& n, const ConvGeom& g, const Shape& dout) {
  SF_ENFORCE(dout == output_shape(g), ShapeError, "{}: dout is {}, the convolution's output is {}", node_label(n),
             brief_shape(dout), brief_shape(output_shape(g)));
}

TypeInfo infer_backprop_input(const Node& n, const std::vector<const Node*>& in) {
  check_f32(n, in);
  const Shape x = n.attrs.get_ints("input_size");
  const ConvGeom g = geometry(n, x, in[1]->shape);
  check_dout(n, g, in[0]->shape);
  return {x, DType::kF32};
}

void forward_backprop_input(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const ConvGeom g = geometry(n, out.shape(), in[1].shape());
  const int64_t k = g.col_rows(), cols = g.col_cols(), image = g.c * g.h * g.w;
  if (out.numel() == 0) return;
  if (g.o == 0) {  // no output channels: nothing flows back
    out.zero();
    return;
  }
  const float* dout = in[0].f32();
  const float* w = in[1].f32();
  float* dx = out.f32();
  if (g.direct()) {
    // dx[i] (C, H*W) = w^T (C, O) @ dout[i] (O, H*W)
    for (int64_t i = 0; i < g.n; ++i)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, g.c, cols, g.o, 1.0f, w, k, dout + i * g.o * cols, cols,
                  0.0f, dx + i * image, cols);
    return;
  }
  out.zero();
  Tensor col = Tensor::empty({k, cols});
  for (int64_t i = 0; i < g.n; ++i) {
    // dcol (K, OH*OW) = w^T (K, O) @ dout[i] (O, OH*OW), then scattered onto the pixels.
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, cols, g.o, 1.0f, w, k, dout + i * g.o * cols, cols, 0.0f,
                col.f32(), cols);
    col2im(g, col.f32(), dx + i * image);
  }
}

// ---- Conv2DBackpropFilter(dout, x) ----

TypeInfo infer_backprop_filter(const Node& n, const std::vector<const Node*>& in) {
  check_f32(n, in);
  const Shape w = n.attrs.get_ints("filter_size");
  const ConvGeom g = geometry(n, in[1]->shape, w);
  check_dout(n, g, in[0]->shape);
  return {w, DType::kF32};
}

void forward_backprop_filter(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const ConvGeom g = geometry(n, in[1].shape(), out.shape());
  const int64_t k = g.col_rows(), cols = g.col_cols(), image = g.c * g.h * g.w;
  if (out.numel() == 0) return;
  if (g.n == 0 || cols == 0) {
    out.zero();
    return;
  }
  const float* dout = in[0].f32();
  const float* x = in[1].f32();
  Tensor col = g.direct() ? Tensor() : Tensor::empty({k, cols});
  for (int64_t i = 0; i < g.n; ++i) {
    const float* src = x + i * image;
    if (!g.direct()) {
      im2col(g, src, col.f32());
      src = col.f32();
    }
    // dw (O, K) += dout[i] (O, OH*OW) @ col^T (OH*OW, K); the first image overwrites.
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g.o, k, cols, 1.0f, dout + i * g.o * cols, cols, src, cols,
                i == 0 ? 0.0f : 1.0f, out.f32(), k);
  }
}

}  // namespace

void register_conv2d_ops(OpRegistry& r) {
  r.add({.name = "Conv2D", .arity = 2, .infer = infer_conv, .forward = forward_conv, .grad = grad_conv});
  r.add({.name = "Conv2DBackpropInput", .arity = 2, .infer = infer_backprop_input, .forward = forward_backprop_input,
         .grad = {}});
  r.add({.name = "Conv2DBackpropFilter", .arity = 2, .infer = infer_backprop_filter,
         .forward = forward_backprop_filter, .grad = {}});
}

}  // namespace sf
