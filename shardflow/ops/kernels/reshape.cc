// Flatten: (N, d1, d2, ...) -> (N, d1*d2*...). Reshape(x) attr `shape`: any shape with the
// same number of elements, one dim may be -1 (inferred). Elements keep their row-major order,
// so both kernels are one memcpy; the gradient is a Reshape back to the input shape.
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
TypeInfo infer_flatten(const Node& n, const std::vector<const Node*>& in) {
  const Shape& s = in[0]->shape;
  SF_ENFORCE(!s.empty(), ShapeError, "{}: input must have rank >= 1 (dim 0 is kept), got a scalar", node_label(n));
  int64_t rest = 1;
  for (size_t i = 1; i < s.size(); ++i) rest *= s[i];
  return {{s[0], rest}, in[0]->dtype};
}

TypeInfo infer_reshape(const Node& n, const std::vector<const Node*>& in) {
  const Shape& from = in[0]->shape;
  Shape to = n.attrs.get_ints("shape");
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < to.size(); ++i) {
    if (to[i] == -1) {
      SF_ENFORCE(infer_at < 0, ShapeError, "{}: shape {} has more than one -1", node_label(n), brief_shape(to));
      infer_at = static_cast<int>(i);
    } else {
      SF_ENFORCE(to[i] >= 0, ShapeError, "{}: shape {} has a negative dim", node_label(n), brief_shape(to));
      known *= to[i];
    }
  }
  if (infer_at >= 0) {
    SF_ENFORCE(known > 0 && numel(from) % known == 0, ShapeError, "{}: cannot reshape {} to {}", node_label(n),
               brief_shape(from), brief_shape(to));
    to[infer_at] = numel(from) / known;
  }
  SF_ENFORCE(numel(to) == numel(from), ShapeError, "{}: cannot reshape {} ({} elements) to {} ({} elements)",
             node_label(n), brief_shape(from), numel(from), brief_shape(to), numel(to));
  return {to, in[0]->dtype};
}

void forward_copy(const Node&, const std::vector<Tensor>& in, Tensor& out) { out.copy_from(in[0]); }

std::vector<int> grad_reshape(GradContext& ctx, const Node& fwd, int dout) {
  return {ctx.emit("Reshape", {dout}, {{"shape", ctx.node(fwd.inputs[0]).shape}})};
}
}  // namespace

void register_reshape_ops(OpRegistry& r) {
  r.add({.name = "Flatten", .arity = 1, .infer = infer_flatten, .forward = forward_copy, .grad = grad_reshape});
  r.add({.name = "Reshape", .arity = 1, .infer = infer_reshape, .forward = forward_copy, .grad = grad_reshape});
}

}  // namespace sf
