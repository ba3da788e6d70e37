// Concat(x0, x1, ...) attr axis (negative counts from the end): joins the inputs along one
// axis; every other dim must match, and so must the dtypes. Viewed as (outer, axis*inner),
// each input contributes one contiguous chunk per outer index, so the kernel is a sequence
// of memcpys. The gradient of input i is a StridedSlice of dout over its range on the axis.
//
// FlattenConcat(x0, x1, ...) (MindSpore's inner op of that name): the inputs' elements, each
// flattened in row-major order, one after another in a 1-D output; any shapes, one dtype. It
// packs gradients into one buffer for a single AllReduce. The gradient of input i is its
// range of dout, reshaped back.
#include <cstring>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
int axis_of(const Node& n, size_t rank) {
  const int64_t axis = n.attrs.get_int("axis");
  const int64_t r = static_cast<int64_t>(rank);
  SF_ENFORCE(axis >= -r && axis < r, ShapeError, "{}: axis {} out of range for rank {}", node_label(n), axis, r);
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

TypeInfo infer_concat(const Node& n, const std::vector<const Node*>& in) {
  const Node& first = *in[0];
  const int axis = axis_of(n, first.shape.size());
  Shape out = first.shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const Node& x = *in[i];
    SF_ENFORCE(x.dtype == first.dtype, ShapeError, "{}: input {} is {}, input 0 is {}", node_label(n), i,
               dtype_name(x.dtype), dtype_name(first.dtype));
    bool same = x.shape.size() == first.shape.size();
    for (size_t d = 0; same && d < x.shape.size(); ++d) same = static_cast<int>(d) == axis || x.shape[d] == out[d];
    SF_ENFORCE(same, ShapeError, "{}: input {} has shape {}, input 0 has {}: all dims except axis {} must match",
               node_label(n), i, brief_shape(x.shape), brief_shape(first.shape), axis);
    out[axis] += x.shape[axis];
  }
  return {out, first.dtype};
}

void forward_concat(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const Shape& s = out.shape();
  const int axis = axis_of(n, s.size());
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const size_t elem = dtype_size(out.dtype());
  const size_t out_row = static_cast<size_t>(s[axis] * inner) * elem;
  auto* o = static_cast<std::byte*>(out.raw());
  size_t col = 0;  // byte offset of the current input's chunk inside an output row
  for (const Tensor& x : in) {
    const size_t chunk = static_cast<size_t>(x.dim(axis) * inner) * elem;
    const auto* p = static_cast<const std::byte*>(x.raw());
    if (chunk)
      for (int64_t r = 0; r < outer; ++r) std::memcpy(o + r * out_row + col, p + r * chunk, chunk);
    col += chunk;
  }
}

std::vector<int> grad_concat(GradContext& ctx, const Node& fwd, int dout) {
  const int axis = axis_of(fwd, fwd.shape.size());
  std::vector<int> grads;
  int64_t offset = 0;
  for (size_t i = 0; i < fwd.inputs.size(); ++i) {
    const Shape& s = ctx.node(fwd.inputs[i]).shape;
    if (ctx.wants(static_cast<int>(i))) {
      std::vector<int64_t> begin(s.size(), 0), end = s;
      begin[axis] = offset;
      end[axis] = offset + s[axis];
      grads.push_back(ctx.emit("StridedSlice", {dout}, {{"begin", begin}, {"end", end}}));
    } else {
      grads.push_back(-1);
    }
    offset += s[axis];
  }
  return grads;
}
TypeInfo infer_flatten_concat(const Node& n, const std::vector<const Node*>& in) {
  int64_t total = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    SF_ENFORCE(in[i]->dtype == in[0]->dtype, ShapeError, "{}: input {} is {}, input 0 is {}", node_label(n), i,
               dtype_name(in[i]->dtype), dtype_name(in[0]->dtype));
    total += numel(in[i]->shape);
  }
  return {{total}, in[0]->dtype};
}

void forward_flatten_concat(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  auto* o = static_cast<std::byte*>(out.raw());
  for (const Tensor& x : in) {
    if (x.nbytes()) std::memcpy(o, x.raw(), x.nbytes());
    o += x.nbytes();
  }
}

std::vector<int> grad_flatten_concat(GradContext& ctx, const Node& fwd, int dout) {
  std::vector<int> grads;
  int64_t offset = 0;
  for (size_t i = 0; i < fwd.inputs.size(); ++i) {
    const Shape& s = ctx.node(fwd.inputs[i]).shape;
    if (ctx.wants(static_cast<int>(i))) {
      const int slice = ctx.emit("StridedSlice", {dout}, {{"begin", std::vector<int64_t>{offset}},
                                                          {"end", std::vector<int64_t>{offset + numel(s)}}});
      grads.push_back(ctx.emit("Reshape", {slice}, {{"shape", s}}));
    } else {
      grads.push_back(-1);
    }
    offset += numel(s);
  }
  return grads;
}
}  // namespace

void register_concat_ops(OpRegistry& r) {
  r.add({.name = "Concat", .arity = -1, .infer = infer_concat, .forward = forward_concat, .grad = grad_concat});
  r.add({.name = "FlattenConcat", .arity = -1, .infer = infer_flatten_concat, .forward = forward_flatten_concat,
         .grad = grad_flatten_concat});
}

}  // namespace sf
