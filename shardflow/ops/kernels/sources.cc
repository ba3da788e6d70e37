// Source ops: Input (fed per step), Parameter (bound to a trainable tensor) and Fill (a
// constant, used to seed autodiff). Input and Parameter have no kernel: the runtime binds them.
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
TypeInfo infer_declared(const Node& n, const std::vector<const Node*>&) {
  const std::string dt = n.attrs.get_str("dtype", "f32");
  SF_ENFORCE(dt == "f32" || dt == "i32", InvalidArgument, "{}: unknown dtype '{}'", node_label(n), dt);
  return {n.attrs.get_ints("shape"), dt == "f32" ? DType::kF32 : DType::kI32};
}
}  // namespace

void register_source_ops(OpRegistry& r) {
  r.add({.name = "Input", .arity = 0, .infer = infer_declared, .forward = {}, .grad = {}});
  r.add({.name = "Parameter", .arity = 0, .infer = infer_declared, .forward = {}, .grad = {}});
  r.add({.name = "Fill",
         .arity = 0,
         .infer = infer_declared,
         .forward = [](const Node& n, const std::vector<Tensor>&, Tensor& out) {
           out.fill(static_cast<float>(n.attrs.get_float("value")));
         },
         .grad = {}});
}

}  // namespace sf
