// BiasAdd: out = x + bias along channel dim 1 (MindSpore's NCHW convention; for a 2-D x
// that is the last dim). Shapes: x (N, C, ...) of rank >= 2, bias (C,).
// BiasAddGrad(dout): dbias (C,) = sum of dout over every dim except 1.
// Both run once per layer per training step, so they are plain loops over contiguous rows.
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
// x viewed as (outer, channels, inner): outer = N, inner = product of the dims after 1.
struct ChannelDims {
  int64_t outer, channels, inner;
};

ChannelDims channel_dims(const Shape& s) {
  int64_t inner = 1;
  for (size_t i = 2; i < s.size(); ++i) inner *= s[i];
  return {s[0], s[1], inner};
}

TypeInfo infer_bias_add(const Node& n, const std::vector<const Node*>& in) {
  const Node& x = *in[0];
  const Node& b = *in[1];
  SF_ENFORCE(x.dtype == DType::kF32 && b.dtype == DType::kF32, ShapeError, "{}: inputs must be f32, got {} and {}",
             node_label(n), dtype_name(x.dtype), dtype_name(b.dtype));
  SF_ENFORCE(x.shape.size() >= 2, ShapeError, "{}: x must have rank >= 2 (channels on dim 1), got {}", node_label(n),
             brief_shape(x.shape));
  SF_ENFORCE(b.shape.size() == 1 && b.shape[0] == x.shape[1], ShapeError,
             "{}: bias must be 1-D of size x.dim(1) = {}, got bias {} for x {}", node_label(n), x.shape[1],
             brief_shape(b.shape), brief_shape(x.shape));
  return {x.shape, DType::kF32};
}

void forward_bias_add(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  const ChannelDims d = channel_dims(in[0].shape());
  const float* x = in[0].f32();
  const float* b = in[1].f32();
  float* o = out.f32();
  if (d.inner == 1) {  // (N, C): the common dense-layer case, a vectorisable row loop
    for (int64_t r = 0; r < d.outer; ++r, x += d.channels, o += d.channels)
      for (int64_t c = 0; c < d.channels; ++c) o[c] = x[c] + b[c];
    return;
  }
  for (int64_t r = 0; r < d.outer; ++r)
    for (int64_t c = 0; c < d.channels; ++c, x += d.inner, o += d.inner) {
      const float bc = b[c];
      for (int64_t k = 0; k < d.inner; ++k) o[k] = x[k] + bc;
    }
}

TypeInfo infer_bias_add_grad(const Node& n, const std::vector<const Node*>& in) {
  const Node& dout = *in[0];
  SF_ENFORCE(dout.dtype == DType::kF32 && dout.shape.size() >= 2, ShapeError,
             "{}: dout must be f32 of rank >= 2, got {}{}", node_label(n), dtype_name(dout.dtype),
             brief_shape(dout.shape));
  return {{dout.shape[1]}, DType::kF32};
}

void forward_bias_add_grad(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  const ChannelDims d = channel_dims(in[0].shape());
  const float* g = in[0].f32();
  float* o = out.f32();
  out.zero();
  if (d.inner == 1) {  // accumulate whole rows so the inner loop vectorises
    for (int64_t r = 0; r < d.outer; ++r, g += d.channels)
      for (int64_t c = 0; c < d.channels; ++c) o[c] += g[c];
    return;
  }
  for (int64_t r = 0; r < d.outer; ++r)
    for (int64_t c = 0; c < d.channels; ++c, g += d.inner) {
      float s = 0.0f;
      for (int64_t k = 0; k < d.inner; ++k) s += g[k];
      o[c] += s;
    }
}

std::vector<int> grad_bias_add(GradContext& ctx, const Node&, int dout) {
  return {dout, ctx.wants(1) ? ctx.emit("BiasAddGrad", {dout}) : -1};
}
}  // namespace

void register_bias_add_ops(OpRegistry& r) {
  r.add({.name = "BiasAdd", .arity = 2, .infer = infer_bias_add, .forward = forward_bias_add, .grad = grad_bias_add});
  r.add({.name = "BiasAddGrad",
         .arity = 1,
         .infer = infer_bias_add_grad,
         .forward = forward_bias_add_grad,
         .grad = {}});
}

}  // namespace sf
