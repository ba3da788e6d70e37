// Add, Sub, Mul with numpy broadcasting, and SumToShape, which sums a broadcast gradient back
// down to an operand's shape (attrs: shape, optional scale multiplying the result).
//
// Broadcasting right-aligns the shapes; each pair of dims must be equal or contain a 1.
// Same-shape inputs, the common case in a training step, take one flat loop. The general case
// walks the output row by row, each operand addressed by strides that are 0 on its broadcast
// dims, so no index is ever materialised.
#include <array>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/kernels/row_walk.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

enum class BinOp { kAdd, kSub, kMul };

Shape broadcast_shape(const Node& n, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  SF_ENFORCE(r <= kMaxRank, ShapeError, "{}: rank {} exceeds the supported {}", node_label(n), r, kMaxRank);
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i + a.size() < r ? 1 : a[i + a.size() - r];
    const int64_t db = i + b.size() < r ? 1 : b[i + b.size() - r];
    SF_ENFORCE(da == db || da == 1 || db == 1, ShapeError, "{}: shapes {} and {} are not broadcastable", node_label(n),
               brief_shape(a), brief_shape(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Row-major strides of `s` right-aligned to rank r, 0 on dims where s is 1 or absent.
Strides aligned_strides(const Shape& s, size_t r) {
  Strides st{};
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i + r - s.size()] = s[i] == 1 ? 0 : acc;
    acc *= s[i];
  }
  return st;
}

template <BinOp kOp, class T>
inline T apply(T a, T b) {
  if constexpr (kOp == BinOp::kAdd) return a + b;
  if constexpr (kOp == BinOp::kSub) return a - b;
  return a * b;
}

template <BinOp kOp, class T>
void binary(const Tensor& ta, const Tensor& tb, Tensor& out) {
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  T* o = out.data<T>();
  if (ta.shape() == tb.shape()) {
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) o[i] = apply<kOp>(a[i], b[i]);
    return;
  }
  const Shape& s = out.shape();
  const size_t r = s.size();
  const Strides sa = aligned_strides(ta.shape(), r), sb = aligned_strides(tb.shape(), r);
  const int64_t len = r ? s.back() : 1, ia = r ? sa[r - 1] : 0, ib = r ? sb[r - 1] : 0;
  for_each_row(s, sa, sb, [&](int64_t oa, int64_t ob) {
    const T* pa = a + oa;
    const T* pb = b + ob;
    if (ia && ib) {
      for (int64_t j = 0; j < len; ++j) o[j] = apply<kOp>(pa[j], pb[j]);
    } else if (ib) {
      for (int64_t j = 0; j < len; ++j) o[j] = apply<kOp>(*pa, pb[j]);
    } else if (ia) {
      for (int64_t j = 0; j < len; ++j) o[j] = apply<kOp>(pa[j], *pb);
    } else {
      for (int64_t j = 0; j < len; ++j) o[j] = apply<kOp>(*pa, *pb);
    }
    o += len;
  });
}

template <BinOp kOp>
void forward_binary(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  if (out.dtype() == DType::kF32)
    binary<kOp, float>(in[0], in[1], out);
  else
    binary<kOp, int32_t>(in[0], in[1], out);
}

TypeInfo infer_binary(const Node& n, const std::vector<const Node*>& in) {
  SF_ENFORCE(in[0]->dtype == in[1]->dtype, ShapeError, "{}: inputs must have the same dtype, got {}{} and {}{}",
             node_label(n), dtype_name(in[0]->dtype), brief_shape(in[0]->shape), dtype_name(in[1]->dtype),
             brief_shape(in[1]->shape));
  return {broadcast_shape(n, in[0]->shape, in[1]->shape), in[0]->dtype};
}

TypeInfo infer_sum_to_shape(const Node& n, const std::vector<const Node*>& in) {
  const Shape target = n.attrs.get_ints("shape");
  const Shape& x = in[0]->shape;
  SF_ENFORCE(in[0]->dtype == DType::kF32, ShapeError, "{}: input must be f32", node_label(n));
  SF_ENFORCE(target.size() <= x.size() && broadcast_shape(n, target, x) == x, ShapeError,
             "{}: cannot sum {} down to {}: the target must broadcast to the input", node_label(n), brief_shape(x),
             brief_shape(target));
  return {target, DType::kF32};
}

void forward_sum_to_shape(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const float scale = static_cast<float>(n.attrs.get_float("scale", 1.0));
  const float* x = in[0].f32();
  float* o = out.f32();
  if (in[0].numel() == out.numel()) {  // only size-1 dims differ: same layout
    for (int64_t i = 0; i < out.numel(); ++i) o[i] = scale * x[i];
    return;
  }
  out.zero();
  const Shape& s = in[0].shape();
  const size_t r = s.size();
  const Strides sx = aligned_strides(s, r), so = aligned_strides(out.shape(), r);
  const int64_t len = s.back(), inner_o = so[r - 1];
  for_each_row(s, sx, so, [&](int64_t ox, int64_t oo) {
    const float* p = x + ox;
    if (inner_o) {
      for (int64_t j = 0; j < len; ++j) o[oo + j] += p[j];
    } else {
      float acc = 0.0f;
      for (int64_t j = 0; j < len; ++j) acc += p[j];
      o[oo] += acc;
    }
  });
  if (scale != 1.0f)
    for (int64_t i = 0; i < out.numel(); ++i) o[i] *= scale;
}

// The gradient `grad` (output-shaped) summed down to input i's shape and scaled; no node when
// that would be a plain copy.
int reduce_to(GradContext& ctx, const Node& fwd, int grad, int i, double scale = 1.0) {
  const Shape& want = ctx.node(fwd.inputs[i]).shape;
  if (scale == 1.0 && ctx.node(grad).shape == want) return grad;
  Attrs attrs{{"shape", want}};
  if (scale != 1.0) attrs.set("scale", scale);
  return ctx.emit("SumToShape", {grad}, std::move(attrs));
}

std::vector<int> grad_add(GradContext& ctx, const Node& fwd, int dout) {
  return {ctx.wants(0) ? reduce_to(ctx, fwd, dout, 0) : -1, ctx.wants(1) ? reduce_to(ctx, fwd, dout, 1) : -1};
}

std::vector<int> grad_sub(GradContext& ctx, const Node& fwd, int dout) {
  return {ctx.wants(0) ? reduce_to(ctx, fwd, dout, 0) : -1, ctx.wants(1) ? reduce_to(ctx, fwd, dout, 1, -1.0) : -1};
}

// d(a*b)/da = dout * b and d(a*b)/db = dout * a, each summed back over its broadcast dims.
std::vector<int> grad_mul(GradContext& ctx, const Node& fwd, int dout) {
  const int a = fwd.inputs[0], b = fwd.inputs[1];
  return {ctx.wants(0) ? reduce_to(ctx, fwd, ctx.emit("Mul", {dout, b}), 0) : -1,
          ctx.wants(1) ? reduce_to(ctx, fwd, ctx.emit("Mul", {dout, a}), 1) : -1};
}
}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  r.add({.name = "Add", .arity = 2, .infer = infer_binary, .forward = forward_binary<BinOp::kAdd>, .grad = grad_add});
  r.add({.name = "Sub", .arity = 2, .infer = infer_binary, .forward = forward_binary<BinOp::kSub>, .grad = grad_sub});
  r.add({.name = "Mul", .arity = 2, .infer = infer_binary, .forward = forward_binary<BinOp::kMul>, .grad = grad_mul});
  r.add({.name = "SumToShape", .arity = 1, .infer = infer_sum_to_shape, .forward = forward_sum_to_shape, .grad = {}});
}

}  // namespace sf
