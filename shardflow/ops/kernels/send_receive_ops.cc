// Send and Receive as graph ops (comm/send_recv.h gives the transfer's semantics), with
// MindSpore's attributes and bprops. No kernels: the actor runtime runs them on the group's
// collective actor, in program order with the group's other collectives.
//
// Send(x) attrs sr_tag, dest_rank: sends x; its output is an f32 scalar 0, a token that
//   orders later nodes after the send and through which the loss reaches the Send (give a
//   stage's loss the token, e.g. loss + token, or use the token as the loss, and autodiff
//   emits the Receive of x's gradient). grad: Receive(dout) of x's shape and dtype from
//   dest_rank, same sr_tag; dout only orders it.
// Receive(virtual) attrs sr_tag, src_rank, shape, dtype: the tensor that src_rank sent. Its
//   one input is MindSpore's virtual input: it is never read, it only orders the Receive
//   after it and, when a differentiated parameter reaches it, makes autodiff emit the Send
//   of dout back to src_rank. grad: Send(dout) to src_rank; the virtual input's own gradient
//   is zero, computed from the Send's token so that fetching it runs the Send.
#include <string>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/collective_attrs.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

constexpr int64_t kMaxTag = int64_t{1} << 32;

void check_peer(const Node& n, const char* key) {
  const GroupRef g = group_of(n);
  const int64_t peer = n.attrs.get_int(key, -1);
  SF_ENFORCE(peer >= 0 && peer < g.size, InvalidArgument, "{}: {} = {} is not a rank of group '{}' of size {}",
             node_label(n), key, peer, g.name, g.size);
  const int64_t tag = n.attrs.get_int("sr_tag");
  SF_ENFORCE(tag >= 0 && tag < kMaxTag, InvalidArgument, "{}: sr_tag {} is outside [0, 2^32)", node_label(n), tag);
}

TypeInfo infer_send(const Node& n, const std::vector<const Node*>&) {
  check_peer(n, "dest_rank");
  return {{}, DType::kF32};
}

std::vector<int> grad_send(GradContext& ctx, const Node& fwd, int dout) {
  const Node& x = ctx.node(fwd.inputs[0]);
  const GroupRef g = group_of(fwd);
  return {ctx.emit("Receive", {dout},
                   {{"group", g.name},
                    {"group_size", g.size},
                    {"sr_tag", fwd.attrs.get_int("sr_tag")},
                    {"src_rank", fwd.attrs.get_int("dest_rank")},
                    {"shape", x.shape},
                    {"dtype", std::string(dtype_name(x.dtype))}})};
}

TypeInfo infer_receive(const Node& n, const std::vector<const Node*>&) {
  check_peer(n, "src_rank");
  const Shape s = n.attrs.get_ints("shape");
  for (int64_t d : s)
    SF_ENFORCE(d >= 0, ShapeError, "{}: shape {} has a negative dim", node_label(n), brief_shape(s));
  return {s, dtype_attr(n, "dtype")};
}

std::vector<int> grad_receive(GradContext& ctx, const Node& fwd, int dout) {
  const GroupRef g = group_of(fwd);
  const int token = ctx.emit("Send", {dout},
                             {{"group", g.name},
                              {"group_size", g.size},
                              {"sr_tag", fwd.attrs.get_int("sr_tag")},
                              {"dest_rank", fwd.attrs.get_int("src_rank")}});
  const Shape& x = ctx.node(fwd.inputs[0]).shape;
  return {ctx.emit("BroadcastTo", {token},
                   {{"shape", x}, {"axis", std::vector<int64_t>{}}, {"keep_dims", int64_t{0}}, {"scale", 0.0}})};
}

}  // namespace

void register_send_receive_ops(OpRegistry& r) {
  r.add({.name = "Send", .arity = 1, .infer = infer_send, .forward = refuse_outside_runtime, .grad = grad_send});
  r.add({.name = "Receive",
         .arity = 1,
         .infer = infer_receive,
         .forward = refuse_outside_runtime,
         .grad = grad_receive});
}

}  // namespace sf
