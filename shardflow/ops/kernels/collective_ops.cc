// The group collectives as graph ops, with MindSpore's names, attributes and bprops
// (mindspore/ops/_grad_experimental/grad_comm_ops.py). Every one also carries "group" and
// "group_size" (ops/collective_attrs.h); none has a kernel here, the actor runtime runs them.
//
// AllReduce(x) attr op ("sum", "prod", "max", "min"): same shape out.
//   grad sum: AllReduce(sum) of dout. max/min: AllReduce(sum) of dout times Equal(x, out),
//   so the ranks holding the extreme share the gradient. prod: AllReduce(sum)(dout * out) / x.
// AllGather(x): (d0, ...) -> (n*d0, ...). grad: ReduceScatter(sum) of dout.
// ReduceScatter(x) attr op: (n*d, ...) -> (d, ...). grad (sum only, as MindSpore):
//   AllGather of dout.
// Broadcast(x) attr root_rank: same shape out. grad: dout itself, as MindSpore's bprop does.
//   That is not the derivative of the global function (which would sum every rank's dout on
//   the root and give the others zero); it is kept for parity with MindSpore's training runs.
// AlltoAll(x) attrs split_count (= n), split_dim, concat_dim: x's split_dim shrinks n times,
//   its concat_dim grows n times. grad: AlltoAll of dout with split_dim and concat_dim swapped.
#include <string>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/collective_attrs.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// Attrs for a gradient collective on the same group as `fwd`.
Attrs on_group_of(const Node& fwd) {
  const GroupRef g = group_of(fwd);
  return {{"group", g.name}, {"group_size", g.size}};
}

std::string reduce_op_of(const Node& n) {
  const std::string op = n.attrs.get_str("op", "sum");
  SF_ENFORCE(op == "sum" || op == "prod" || op == "max" || op == "min", InvalidArgument,
             "{}: attribute op = '{}' is not a reduction (sum, prod, max or min)", node_label(n), op);
  return op;
}

// A dim index that may count from the end, checked against the rank.
int64_t dim_index(const Node& n, const char* key, const Shape& s) {
  const int64_t r = static_cast<int64_t>(s.size());
  const int64_t d = n.attrs.get_int(key);
  SF_ENFORCE(d >= -r && d < r, ShapeError, "{}: {} = {} is out of range for input shape {}", node_label(n), key, d,
             brief_shape(s));
  return d < 0 ? d + r : d;
}

TypeInfo infer_all_reduce(const Node& n, const std::vector<const Node*>& in) {
  group_of(n);
  reduce_op_of(n);
  return {in[0]->shape, in[0]->dtype};
}

std::vector<int> grad_all_reduce(GradContext& ctx, const Node& fwd, int dout) {
  const std::string op = reduce_op_of(fwd);
  Attrs sum = on_group_of(fwd);
  sum.set("op", std::string("sum"));
  const int x = fwd.inputs[0];
  if (op == "sum") return {ctx.emit("AllReduce", {dout}, sum)};
  if (op == "prod") {
    const int reduced = ctx.emit("AllReduce", {ctx.emit("Mul", {dout, fwd.id})}, sum);
    return {ctx.emit("RealDiv", {reduced, x})};
  }
  const int reduced = ctx.emit("AllReduce", {dout}, sum);
  return {ctx.emit("Mul", {reduced, ctx.emit("Equal", {x, fwd.id})})};
}

TypeInfo infer_all_gather(const Node& n, const std::vector<const Node*>& in) {
  const GroupRef g = group_of(n);
  Shape s = in[0]->shape;
  SF_ENFORCE(!s.empty(), ShapeError, "{}: input must have rank >= 1 (it is gathered along dim 0), got a scalar",
             node_label(n));
  s[0] *= g.size;
  return {s, in[0]->dtype};
}

std::vector<int> grad_all_gather(GradContext& ctx, const Node& fwd, int dout) {
  Attrs a = on_group_of(fwd);
  a.set("op", std::string("sum"));
  return {ctx.emit("ReduceScatter", {dout}, std::move(a))};
}

TypeInfo infer_reduce_scatter(const Node& n, const std::vector<const Node*>& in) {
  const GroupRef g = group_of(n);
  reduce_op_of(n);
  Shape s = in[0]->shape;
  SF_ENFORCE(!s.empty() && s[0] % g.size == 0, ShapeError,
             "{}: dim 0 of input {} must be divisible by the size {} of group '{}'", node_label(n), brief_shape(s),
             g.size, g.name);
  s[0] /= g.size;
  return {s, in[0]->dtype};
}

std::vector<int> grad_reduce_scatter(GradContext& ctx, const Node& fwd, int dout) {
  SF_ENFORCE(reduce_op_of(fwd) == "sum", InvalidArgument,
             "gradients: {} has op '{}'; only ReduceScatter with op 'sum' has a gradient (as in MindSpore)",
             node_label(fwd), reduce_op_of(fwd));
  return {ctx.emit("AllGather", {dout}, on_group_of(fwd))};
}

TypeInfo infer_broadcast(const Node& n, const std::vector<const Node*>& in) {
  const GroupRef g = group_of(n);
  const int64_t root = n.attrs.get_int("root_rank");
  SF_ENFORCE(root >= 0 && root < g.size, InvalidArgument, "{}: root_rank {} is out of range for group '{}' of size {}",
             node_label(n), root, g.name, g.size);
  return {in[0]->shape, in[0]->dtype};
}

std::vector<int> grad_broadcast(GradContext&, const Node&, int dout) { return {dout}; }

TypeInfo infer_all_to_all(const Node& n, const std::vector<const Node*>& in) {
  const GroupRef g = group_of(n);
  const int64_t count = n.attrs.get_int("split_count");
  SF_ENFORCE(count == g.size, InvalidArgument, "{}: split_count {} must equal the size {} of group '{}'",
             node_label(n), count, g.size, g.name);
  Shape s = in[0]->shape;
  const int64_t split = dim_index(n, "split_dim", s), concat = dim_index(n, "concat_dim", s);
  SF_ENFORCE(s[split] % count == 0, ShapeError,
             "{}: split_dim {} of input {} (size {}) is not divisible by split_count {}", node_label(n), split,
             brief_shape(s), s[split], count);
  s[split] /= count;
  s[concat] *= count;
  return {s, in[0]->dtype};
}

std::vector<int> grad_all_to_all(GradContext& ctx, const Node& fwd, int dout) {
  Attrs a = on_group_of(fwd);
  a.set("split_count", fwd.attrs.get_int("split_count"));
  a.set("split_dim", fwd.attrs.get_int("concat_dim"));
  a.set("concat_dim", fwd.attrs.get_int("split_dim"));
  return {ctx.emit("AlltoAll", {dout}, std::move(a))};
}

}  // namespace

void register_collective_ops(OpRegistry& r) {
  const auto add = [&r](const char* name, InferFn infer, GradFn grad) {
    r.add({.name = name, .arity = 1, .infer = infer, .forward = refuse_outside_runtime, .grad = grad});
  };
  add("AllReduce", infer_all_reduce, grad_all_reduce);
  add("AllGather", infer_all_gather, grad_all_gather);
  add("ReduceScatter", infer_reduce_scatter, grad_reduce_scatter);
  add("Broadcast", infer_broadcast, grad_broadcast);
  add("AlltoAll", infer_all_to_all, grad_all_to_all);
}

}  // namespace sf
