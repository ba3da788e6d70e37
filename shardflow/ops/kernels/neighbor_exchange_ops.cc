// The neighbour exchanges as graph ops, with MindSpore's attributes (comm/neighbor_exchange.h
// and comm/neighbor_exchange_v2.h give the exact semantics). No kernels: the actor runtime
// runs them on the group's collective actor.
//
// NeighborExchange(packed) attrs send_rank_ids, recv_rank_ids, send_shapes, recv_shapes (shape
//   lists, ops/collective_attrs.h), recv_type. MindSpore's op takes and returns tuples; graph
//   nodes have one output, so here the tensors travel packed: the input is every tensor to
//   send, flattened and concatenated in send_rank_ids order (1-D), and the output every
//   received tensor likewise in recv_rank_ids order. CollectiveBuilder::neighbor_exchange
//   packs and unpacks with Reshape/Concat/StridedSlice, so users still pass and get lists.
//   grad: the exchange reversed (send and receive lists swapped), applied to the packed dout,
//   which is exactly the packed form the reversed exchange sends.
// NeighborExchangeV2(x) attrs send_rank_ids (8), send_lens (4), recv_rank_ids (8), recv_lens
//   (4), data_format: (N, C, H, W) -> (N, C, t + H + b, l + W + r), where t, b, l, r are
//   recv_lens on the sides that have a neighbour in recv_rank_ids and 0 on the others
//   (MindSpore's shape rule); a corner may have a neighbour only when both sides next to it
//   do. grad: NeighborExchangeV2Grad with the send and receive lists swapped, as MindSpore's
//   bprop builds it.
// NeighborExchangeV2Grad(dout) same attrs (already swapped): sends each halo region of dout
//   back to the rank it came from (send_rank_ids[d] = the forward's recv_rank_ids[d]) and
//   adds the halos' gradients it gets back into the slices of the input they were cut from;
//   (N, C, t + H + b, l + W + r) -> (N, C, H, W), with t, b, l, r from send_lens and
//   send_rank_ids by the rule above.
#include <array>
#include <string>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/collective_attrs.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

constexpr std::array<const char*, 4> kLenNames = {"top", "bottom", "left", "right"};
constexpr std::array<const char*, 8> kDirNames = {"top",    "top_right",   "right", "bottom_right",
                                                  "bottom", "bottom_left", "left",  "top_left"};
// The direction of the neighbour on side i of [top, bottom, left, right].
constexpr std::array<int, 4> kSideDir = {0, 4, 6, 2};

Attrs on_group_of(const Node& fwd) {
  const GroupRef g = group_of(fwd);
  return {{"group", g.name}, {"group_size", g.size}};
}

// Rank ids must be group ranks, or -1 where `allow_none` (a direction with no neighbour).
void check_rank_ids(const Node& n, const char* key, const GroupRef& g, size_t want_size, bool allow_none) {
  const std::vector<int64_t> ids = n.attrs.get_ints(key);
  if (want_size > 0)
    SF_ENFORCE(ids.size() == want_size, InvalidArgument,
               "{}: {} has {} entries; it needs {}, one per direction [top, top_right, right, bottom_right, bottom, "
               "bottom_left, left, top_left]",
               node_label(n), key, ids.size(), want_size);
  for (size_t i = 0; i < ids.size(); ++i)
    SF_ENFORCE((allow_none && ids[i] == -1) || (ids[i] >= 0 && ids[i] < g.size), InvalidArgument,
               "{}: {}[{}] = {} is {}a rank of group '{}' of size {}", node_label(n), key, i, ids[i],
               allow_none ? "neither -1 nor " : "not ", g.name, g.size);
}

int64_t total_numel(const std::vector<Shape>& shapes) {
  int64_t total = 0;
  for (const Shape& s : shapes) total += numel(s);
  return total;
}

TypeInfo infer_neighbor_exchange(const Node& n, const std::vector<const Node*>& in) {
  const GroupRef g = group_of(n);
  check_rank_ids(n, "send_rank_ids", g, 0, false);
  check_rank_ids(n, "recv_rank_ids", g, 0, false);
  const std::vector<Shape> send = decode_shapes(n, "send_shapes"), recv = decode_shapes(n, "recv_shapes");
  const size_t sends = n.attrs.get_ints("send_rank_ids").size(), recvs = n.attrs.get_ints("recv_rank_ids").size();
  SF_ENFORCE(send.size() == sends, InvalidArgument, "{}: {} send_shapes for {} send_rank_ids", node_label(n),
             send.size(), sends);
  SF_ENFORCE(recv.size() == recvs, InvalidArgument, "{}: {} recv_shapes for {} recv_rank_ids", node_label(n),
             recv.size(), recvs);
  const Shape packed{total_numel(send)};
  SF_ENFORCE(in[0]->shape == packed, ShapeError,
             "{}: the packed input must be {} (every send_shapes entry flattened, in order), got {}", node_label(n),
             brief_shape(packed), brief_shape(in[0]->shape));
  return {{total_numel(recv)}, dtype_attr(n, "recv_type")};
}

std::vector<int> grad_neighbor_exchange(GradContext& ctx, const Node& fwd, int dout) {
  Attrs a = on_group_of(fwd);
  a.set("send_rank_ids", fwd.attrs.get_ints("recv_rank_ids"));
  a.set("recv_rank_ids", fwd.attrs.get_ints("send_rank_ids"));
  a.set("send_shapes", fwd.attrs.get_ints("recv_shapes"));
  a.set("recv_shapes", fwd.attrs.get_ints("send_shapes"));
  a.set("recv_type", std::string(dtype_name(ctx.node(fwd.inputs[0]).dtype)));
  return {ctx.emit("NeighborExchange", {dout}, std::move(a))};
}

// Checks the attributes both V2 ops share; returns (send_lens, recv_lens).
std::array<std::vector<int64_t>, 2> check_v2_attrs(const Node& n, const Shape& x) {
  const GroupRef g = group_of(n);
  const std::string format = n.attrs.get_str("data_format", "NCHW");
  SF_ENFORCE(format == "NCHW", InvalidArgument, "{}: data_format '{}' is not supported; use 'NCHW'", node_label(n),
             format);
  SF_ENFORCE(x.size() == 4, ShapeError, "{}: input {} is not 4-D (N, C, H, W)", node_label(n), brief_shape(x));
  check_rank_ids(n, "send_rank_ids", g, 8, true);
  check_rank_ids(n, "recv_rank_ids", g, 8, true);
  std::array<std::vector<int64_t>, 2> lens = {n.attrs.get_ints("send_lens"), n.attrs.get_ints("recv_lens")};
  for (int k = 0; k < 2; ++k) {
    const char* key = k == 0 ? "send_lens" : "recv_lens";
    SF_ENFORCE(lens[k].size() == 4, InvalidArgument, "{}: {} has {} entries; it needs 4, [top, bottom, left, right]",
               node_label(n), key, lens[k].size());
    for (int i = 0; i < 4; ++i)
      SF_ENFORCE(lens[k][i] >= 0, InvalidArgument, "{}: {}[{}] ({}) = {} is negative", node_label(n), key, i,
                 kLenNames[i], lens[k][i]);
  }
  return lens;
}

// The halo sizes [t, b, l, r]: `lens` on the sides where `ids` has a neighbour, else 0.
std::array<int64_t, 4> halo_lens(const Node& n, const char* ids_key, const std::vector<int64_t>& lens) {
  const std::vector<int64_t> ids = n.attrs.get_ints(ids_key);
  std::array<int64_t, 4> out{};
  for (int i = 0; i < 4; ++i) out[i] = ids[kSideDir[i]] >= 0 ? lens[i] : 0;
  return out;
}

// A corner halo lies between two side halos, so it needs both (MindSpore refuses it too).
void check_corners(const Node& n, const char* ids_key) {
  const std::vector<int64_t> ids = n.attrs.get_ints(ids_key);
  for (int corner = 1; corner < 8; corner += 2) {
    const int a = corner - 1, b = (corner + 1) % 8;
    SF_ENFORCE(ids[corner] < 0 || (ids[a] >= 0 && ids[b] >= 0), InvalidArgument,
               "{}: {}[{}] ({}) = {} but {} = {} and {} = {}: a corner has a neighbour only when both sides next "
               "to it have one",
               node_label(n), ids_key, corner, kDirNames[corner], ids[corner], kDirNames[a], ids[a], kDirNames[b],
               ids[b]);
  }
}

// The slices sent (forward) or received back (grad) are cut from an (H, W) plane.
void check_fits(const Node& n, const char* key, const std::vector<int64_t>& lens, int64_t h, int64_t w,
                const Shape& x) {
  for (int i = 0; i < 4; ++i)
    SF_ENFORCE(lens[i] <= (i < 2 ? h : w), ShapeError,
               "{}: {}[{}] ({}) = {} is larger than {} = {} of input {}: lengths inconsistent with the shape",
               node_label(n), key, i, kLenNames[i], lens[i], i < 2 ? "H" : "W", i < 2 ? h : w, brief_shape(x));
}

TypeInfo infer_neighbor_exchange_v2(const Node& n, const std::vector<const Node*>& in) {
  const Shape& x = in[0]->shape;
  const auto [send, recv] = check_v2_attrs(n, x);
  check_fits(n, "send_lens", send, x[2], x[3], x);
  check_corners(n, "recv_rank_ids");
  const auto halo = halo_lens(n, "recv_rank_ids", recv);
  return {{x[0], x[1], halo[0] + x[2] + halo[1], halo[2] + x[3] + halo[3]}, in[0]->dtype};
}

std::vector<int> grad_neighbor_exchange_v2(GradContext& ctx, const Node& fwd, int dout) {
  Attrs a = on_group_of(fwd);
  a.set("send_rank_ids", fwd.attrs.get_ints("recv_rank_ids"));
  a.set("send_lens", fwd.attrs.get_ints("recv_lens"));
  a.set("recv_rank_ids", fwd.attrs.get_ints("send_rank_ids"));
  a.set("recv_lens", fwd.attrs.get_ints("send_lens"));
  a.set("data_format", fwd.attrs.get_str("data_format", "NCHW"));
  return {ctx.emit("NeighborExchangeV2Grad", {dout}, std::move(a))};
}

TypeInfo infer_neighbor_exchange_v2_grad(const Node& n, const std::vector<const Node*>& in) {
  const Shape& dy = in[0]->shape;
  const auto [send, recv] = check_v2_attrs(n, dy);
  SF_ENFORCE(in[0]->dtype == DType::kF32, ShapeError, "{}: dout must be f32, got {}", node_label(n),
             dtype_name(in[0]->dtype));
  check_corners(n, "send_rank_ids");
  const auto halo = halo_lens(n, "send_rank_ids", send);
  const int64_t h = dy[2] - halo[0] - halo[1], w = dy[3] - halo[2] - halo[3];
  SF_ENFORCE(h >= 0 && w >= 0, ShapeError, "{}: dout {} is smaller than its halos ({}, {}, {}, {})", node_label(n),
             brief_shape(dy), halo[0], halo[1], halo[2], halo[3]);
  const Shape x{dy[0], dy[1], h, w};
  check_fits(n, "recv_lens", recv, h, w, x);
  return {x, DType::kF32};
}

}  // namespace

void register_neighbor_exchange_ops(OpRegistry& r) {
  r.add({.name = "NeighborExchange",
         .arity = 1,
         .infer = infer_neighbor_exchange,
         .forward = refuse_outside_runtime,
         .grad = grad_neighbor_exchange});
  r.add({.name = "NeighborExchangeV2",
         .arity = 1,
         .infer = infer_neighbor_exchange_v2,
         .forward = refuse_outside_runtime,
         .grad = grad_neighbor_exchange_v2});
  r.add({.name = "NeighborExchangeV2Grad",
         .arity = 1,
         .infer = infer_neighbor_exchange_v2_grad,
         .forward = refuse_outside_runtime,
         .grad = {}});
}

}  // namespace sf
