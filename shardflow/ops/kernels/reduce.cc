// ReduceSum / ReduceMean(x) attrs axis (list; empty = every dim; negatives count from the end)
// and keep_dims (reduced dims stay as size 1 instead of being dropped).
// BroadcastTo(dout) attrs shape, axis, keep_dims, optional scale: the gradient of a reduction,
// which copies each reduced value back over the dims it was reduced from, times scale
// (1/count for a mean). It takes the forward's axis and keep_dims to know which dims those were.
//
// keep_dims does not change the element order, so both kernels address the reduced tensor
// through the keep_dims shape with stride 0 on the reduced dims.
#include <array>
#include <variant>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/kernels/row_walk.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// Everything the kernels need, in fixed-size arrays: forward must not allocate.
struct Reduction {
  std::array<bool, kMaxRank> is_reduced{};
  Strides full{};     // row-major strides of the input
  Strides reduced{};  // strides of the result in the input's index space, 0 on reduced dims
  bool last_reduced = false;
  int64_t count = 1;  // input elements summed into each result
};

// The `axis` attribute by reference (an empty list if absent), so that forward does not copy it.
const std::vector<int64_t>& axes_of(const Node& n) {
  static const std::vector<int64_t> kAll;
  const auto it = n.attrs.values().find("axis");
  if (it == n.attrs.values().end()) return kAll;
  const auto* v = std::get_if<std::vector<int64_t>>(&it->second);
  SF_ENFORCE(v != nullptr, InvalidArgument, "{}: attribute 'axis' must be an int list", node_label(n));
  return *v;
}

Reduction reduction_of(const Node& n, const Shape& in) {
  const std::vector<int64_t>& axes = axes_of(n);
  const int64_t r = static_cast<int64_t>(in.size());
  SF_ENFORCE(in.size() <= kMaxRank, ShapeError, "{}: rank {} exceeds the supported {}", node_label(n), r, kMaxRank);
  Reduction red;
  std::array<bool, kMaxRank>& is_reduced = red.is_reduced;
  for (int64_t a : axes) {
    SF_ENFORCE(a >= -r && a < r, ShapeError, "{}: axis {} out of range for input {}", node_label(n), a, brief_shape(in));
    const int64_t d = a < 0 ? a + r : a;
    SF_ENFORCE(!is_reduced[d], ShapeError, "{}: axis {} listed twice in {}", node_label(n), d, brief_shape(axes));
    is_reduced[d] = true;
  }
  if (axes.empty()) is_reduced.fill(true);
  int64_t acc_full = 1, acc_out = 1;
  for (int64_t d = r - 1; d >= 0; --d) {
    red.full[d] = acc_full;
    acc_full *= in[d];
    if (is_reduced[d]) {
      red.count *= in[d];
    } else {
      red.reduced[d] = acc_out;
      acc_out *= in[d];
    }
  }
  red.last_reduced = r > 0 && is_reduced[r - 1];
  return red;
}

// The result shape: reduced dims dropped, or kept as 1 under keep_dims.
Shape reduced_shape(const Node& n, const Shape& in) {
  const Reduction red = reduction_of(n, in);
  const bool keep = n.attrs.get_bool("keep_dims");
  Shape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!red.is_reduced[d] || keep) out.push_back(red.is_reduced[d] ? 1 : in[d]);
  return out;
}

TypeInfo infer_reduce(const Node& n, const std::vector<const Node*>& in) {
  SF_ENFORCE(in[0]->dtype == DType::kF32, ShapeError, "{}: input must be f32, got {}{}", node_label(n),
             dtype_name(in[0]->dtype), brief_shape(in[0]->shape));
  return {reduced_shape(n, in[0]->shape), DType::kF32};
}

template <bool kMean>
void forward_reduce(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const Reduction red = reduction_of(n, in[0].shape());
  const Shape& s = in[0].shape();
  const float* x = in[0].f32();
  float* o = out.f32();
  const float scale = kMean ? static_cast<float>(1.0 / static_cast<double>(red.count)) : 1.0f;
  if (out.numel() == 1) {  // a full reduction (the usual loss): one double accumulator
    double acc = 0.0;
    for (int64_t i = 0; i < in[0].numel(); ++i) acc += x[i];
    o[0] = static_cast<float>(acc) * scale;
    return;
  }
  out.zero();
  const int64_t len = s.empty() ? 1 : s.back();
  for_each_row(s, red.full, red.reduced, [&](int64_t ox, int64_t oo) {
    const float* p = x + ox;
    if (red.last_reduced) {
      double acc = 0.0;
      for (int64_t j = 0; j < len; ++j) acc += p[j];
      o[oo] += static_cast<float>(acc);
    } else {
      for (int64_t j = 0; j < len; ++j) o[oo + j] += p[j];
    }
  });
  if (kMean)
    for (int64_t i = 0; i < out.numel(); ++i) o[i] *= scale;
}

TypeInfo infer_broadcast_to(const Node& n, const std::vector<const Node*>& in) {
  const Shape full = n.attrs.get_ints("shape");
  const Shape want = reduced_shape(n, full);
  SF_ENFORCE(in[0]->dtype == DType::kF32 && in[0]->shape == want, ShapeError,
             "{}: input must be f32{} (the reduction of {}), got {}{}", node_label(n), brief_shape(want),
             brief_shape(full), dtype_name(in[0]->dtype), brief_shape(in[0]->shape));
  return {full, DType::kF32};
}

void forward_broadcast_to(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const Shape& s = out.shape();
  const Reduction red = reduction_of(n, s);
  const float scale = static_cast<float>(n.attrs.get_float("scale", 1.0));
  const float* g = in[0].f32();
  float* o = out.f32();
  const int64_t len = s.empty() ? 1 : s.back();
  for_each_row(s, red.full, red.reduced, [&](int64_t oo, int64_t og) {
    if (red.last_reduced) {
      const float v = g[og] * scale;
      for (int64_t j = 0; j < len; ++j) o[oo + j] = v;
    } else {
      for (int64_t j = 0; j < len; ++j) o[oo + j] = g[og + j] * scale;
    }
  });
}

template <bool kMean>
std::vector<int> grad_reduce(GradContext& ctx, const Node& fwd, int dout) {
  const Shape& in = ctx.node(fwd.inputs[0]).shape;
  Attrs attrs = fwd.attrs;
  attrs.set("shape", in);
  if (kMean) attrs.set("scale", 1.0 / static_cast<double>(reduction_of(fwd, in).count));
  return {ctx.emit("BroadcastTo", {dout}, std::move(attrs))};
}
}  // namespace

void register_reduce_ops(OpRegistry& r) {
  r.add({.name = "ReduceSum",
         .arity = 1,
         .infer = infer_reduce,
         .forward = forward_reduce<false>,
         .grad = grad_reduce<false>});
  r.add({.name = "ReduceMean",
         .arity = 1,
         .infer = infer_reduce,
         .forward = forward_reduce<true>,
         .grad = grad_reduce<true>});
  r.add({.name = "BroadcastTo",
         .arity = 1,
         .infer = infer_broadcast_to,
         .forward = forward_broadcast_to,
         .grad = {}});
}

}  // namespace sf
