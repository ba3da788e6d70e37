// StridedSlice(x) attrs begin, end, optional strides: x[b0:e0:s0, b1:e1:s1, ...] with Python
// slice semantics: a negative begin or end counts from the end of the dim, both are clamped to
// [0, dim], strides must be positive (default 1). Dims past the given entries are taken whole.
// StridedSliceGrad(dout) attrs shape (of x), begin, end, strides: a zero tensor of `shape`
// with dout written back at the sliced positions.
// Used for the gradient of Concat and for local slicing of replicated tensors.
#include <algorithm>
#include <array>
#include <variant>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/kernels/row_walk.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
using Index = std::array<int64_t, kMaxRank>;

// The selected positions along each dim: start, start + step, ... (count of them).
struct SliceSpec {
  int rank = 0;
  Index start{}, step{}, count{};
  Shape shape() const { return Shape(count.begin(), count.begin() + rank); }
};

// An int-list attribute by reference (an empty list if absent), so that forward does not copy.
const std::vector<int64_t>& ints_attr(const Node& n, const char* key) {
  static const std::vector<int64_t> kNone;
  const auto it = n.attrs.values().find(key);
  if (it == n.attrs.values().end()) return kNone;
  const auto* v = std::get_if<std::vector<int64_t>>(&it->second);
  SF_ENFORCE(v != nullptr, InvalidArgument, "{}: attribute '{}' must be an int list", node_label(n), key);
  return *v;
}

SliceSpec slice_spec(const Node& n, const Shape& in) {
  const std::vector<int64_t>& begin = ints_attr(n, "begin");
  const std::vector<int64_t>& end = ints_attr(n, "end");
  const std::vector<int64_t>& strides = ints_attr(n, "strides");  // empty = all 1
  SF_ENFORCE(in.size() <= kMaxRank, ShapeError, "{}: rank {} exceeds the supported {}", node_label(n), in.size(),
             kMaxRank);
  SF_ENFORCE(begin.size() == end.size() && (strides.empty() || strides.size() == begin.size()) &&
                 begin.size() <= in.size(),
             ShapeError,
             "{}: begin {}, end {} and strides {} must have the same length, at most the rank of x {}",
             node_label(n), brief_shape(begin), brief_shape(end), brief_shape(strides), brief_shape(in));
  SliceSpec s;
  s.rank = static_cast<int>(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t dim = in[d];
    int64_t b = 0, e = dim, st = 1;
    if (d < begin.size()) {
      st = strides.empty() ? 1 : strides[d];
      SF_ENFORCE(st > 0, ShapeError, "{}: stride {} of dim {} must be positive", node_label(n), st, d);
      b = std::clamp(begin[d] < 0 ? begin[d] + dim : begin[d], int64_t{0}, dim);
      e = std::clamp(end[d] < 0 ? end[d] + dim : end[d], int64_t{0}, dim);
    }
    s.start[d] = b;
    s.step[d] = st;
    s.count[d] = e > b ? (e - b + st - 1) / st : 0;
  }
  return s;
}

// Calls row(offset) for each innermost row of the slice, row-major, with the offset in a
// tensor of shape `full` of the row's first element; the row's elements are step[rank-1] apart.
template <class F>
void for_each_slice_row(const SliceSpec& s, const Shape& full, F&& row) {
  const int r = s.rank;
  for (int d = 0; d < r; ++d)
    if (s.count[d] == 0) return;
  Index stride{}, idx{};
  int64_t off = 0, acc = 1;
  for (int d = r - 1; d >= 0; --d) {
    stride[d] = s.step[d] * acc;
    off += s.start[d] * acc;
    acc *= full[d];
  }
  for (int d = 0; d >= 0;) {
    row(off);
    for (d = r - 2; d >= 0; --d) {
      off += stride[d];
      if (++idx[d] < s.count[d]) break;
      off -= stride[d] * s.count[d];
      idx[d] = 0;
    }
  }
}

template <class T>
void gather(const SliceSpec& s, const Tensor& x, Tensor& out) {
  const T* px = x.data<T>();
  T* o = out.data<T>();
  const int64_t len = s.rank ? s.count[s.rank - 1] : 1, step = s.rank ? s.step[s.rank - 1] : 1;
  for_each_slice_row(s, x.shape(), [&](int64_t off) {
    const T* p = px + off;
    for (int64_t j = 0; j < len; ++j) o[j] = p[j * step];
    o += len;
  });
}

TypeInfo infer_slice(const Node& n, const std::vector<const Node*>& in) {
  return {slice_spec(n, in[0]->shape).shape(), in[0]->dtype};
}

void forward_slice(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const SliceSpec s = slice_spec(n, in[0].shape());
  if (out.dtype() == DType::kF32)
    gather<float>(s, in[0], out);
  else
    gather<int32_t>(s, in[0], out);
}

TypeInfo infer_slice_grad(const Node& n, const std::vector<const Node*>& in) {
  const Shape full = n.attrs.get_ints("shape");
  const Shape sliced = slice_spec(n, full).shape();
  SF_ENFORCE(in[0]->dtype == DType::kF32 && in[0]->shape == sliced, ShapeError,
             "{}: dout must be f32{} (the slice of {}), got {}{}", node_label(n), brief_shape(sliced), brief_shape(full),
             dtype_name(in[0]->dtype), brief_shape(in[0]->shape));
  return {full, DType::kF32};
}

void forward_slice_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const SliceSpec s = slice_spec(n, out.shape());
  const float* g = in[0].f32();
  float* o = out.f32();
  const int64_t len = s.rank ? s.count[s.rank - 1] : 1, step = s.rank ? s.step[s.rank - 1] : 1;
  out.zero();
  for_each_slice_row(s, out.shape(), [&](int64_t off) {
    for (int64_t j = 0; j < len; ++j) o[off + j * step] = g[j];
    g += len;
  });
}

std::vector<int> grad_slice(GradContext& ctx, const Node& fwd, int dout) {
  Attrs attrs = fwd.attrs;
  attrs.set("shape", ctx.node(fwd.inputs[0]).shape);
  return {ctx.emit("StridedSliceGrad", {dout}, std::move(attrs))};
}
}  // namespace

void register_slice_ops(OpRegistry& r) {
  r.add({.name = "StridedSlice", .arity = 1, .infer = infer_slice, .forward = forward_slice, .grad = grad_slice});
  r.add({.name = "StridedSliceGrad",
         .arity = 1,
         .infer = infer_slice_grad,
         .forward = forward_slice_grad,
         .grad = {}});
}

}  // namespace sf
