// Equal(a, b): 1 where a == b, else 0, in the inputs' dtype — MindSpore's Equal followed by
// the Cast its bprops apply at once (the IR has no bool dtype). Both inputs have one shape.
// Used by the gradient of AllReduce max/min, which keeps dout where a rank held the extreme.
// Not differentiable (a step function).
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
TypeInfo infer_equal(const Node& n, const std::vector<const Node*>& in) {
  SF_ENFORCE(in[0]->dtype == in[1]->dtype && in[0]->shape == in[1]->shape, ShapeError,
             "{}: inputs must have the same dtype and shape, got {}{} and {}{}", node_label(n),
             dtype_name(in[0]->dtype), brief_shape(in[0]->shape), dtype_name(in[1]->dtype), brief_shape(in[1]->shape));
  return {in[0]->shape, in[0]->dtype};
}

template <class T>
void equal(const Tensor& ta, const Tensor& tb, Tensor& out) {
  const T* a = ta.data<T>();
  const T* b = tb.data<T>();
  T* o = out.data<T>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = a[i] == b[i] ? T{1} : T{0};
}

void forward_equal(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  if (out.dtype() == DType::kF32)
    equal<float>(in[0], in[1], out);
  else
    equal<int32_t>(in[0], in[1], out);
}
}  // namespace

void register_equal_ops(OpRegistry& r) {
  r.add({.name = "Equal", .arity = 2, .infer = infer_equal, .forward = forward_equal, .grad = {}});
}

}  // namespace sf
