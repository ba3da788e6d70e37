#include <shardflow/actors/collective_call.h>

#include <cstring>

#include <shardflow/actors/neighbor_exchange_v2_grad.h>
#include <shardflow/comm/comm.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/collective_attrs.h>

namespace sf {

namespace {

using std::chrono::milliseconds;

comm::ReduceOp reduce_op_of(const Node& n) {
  const std::string op = n.attrs.get_str("op", "sum");
  if (op == "prod") return comm::ReduceOp::kProd;
  if (op == "max") return comm::ReduceOp::kMax;
  if (op == "min") return comm::ReduceOp::kMin;
  return comm::ReduceOp::kSum;  // shape inference refused anything else
}

std::vector<int> ranks(const Node& n, const char* key) {
  std::vector<int> out;
  for (int64_t r : n.attrs.get_ints(key)) out.push_back(static_cast<int>(r));
  return out;
}

// NeighborExchange travels packed (ops/kernels/neighbor_exchange_ops.cc): the input is cut
// into views of send_shapes, and the received tensors are copied one after another.
Tensor neighbor_exchange(const Node& n, const Tensor& packed, const comm::Group& g, milliseconds timeout) {
  comm::NeighborExchangeOptions o;
  o.group = g;
  o.send_rank_ids = ranks(n, "send_rank_ids");
  o.recv_rank_ids = ranks(n, "recv_rank_ids");
  o.recv_shapes = decode_shapes(n, "recv_shapes");
  o.send_shapes = decode_shapes(n, "send_shapes");
  o.recv_type = dtype_attr(n, "recv_type");
  o.timeout = timeout;
  std::vector<Tensor> inputs;
  int64_t offset = 0;
  for (const Shape& s : o.send_shapes) {
    inputs.push_back(packed.rows(offset, offset + numel(s)).view(s));
    offset += numel(s);
  }
  const std::vector<Tensor> received = comm::neighbor_exchange(inputs, o);
  Tensor out(n.shape, n.dtype);
  auto* dst = static_cast<std::byte*>(out.raw());
  for (const Tensor& t : received) {
    if (t.nbytes()) std::memcpy(dst, t.raw(), t.nbytes());
    dst += t.nbytes();
  }
  return out;
}

// Options of comm call `O` on group g with the node's timeout; the caller sets the rest.
template <class O>
O options(const comm::Group& g, milliseconds timeout) {
  O o;
  o.group = g;
  o.timeout = timeout;
  return o;
}

int int_attr(const Node& n, const char* key) { return static_cast<int>(n.attrs.get_int(key)); }

Tensor dispatch(const Node& n, const std::vector<Tensor>& in, const comm::Group& g, milliseconds timeout) {
  const std::string& op = n.op;
  if (op == "AllReduce") {
    auto o = options<comm::AllReduceOptions>(g, timeout);
    o.op = reduce_op_of(n);
    return comm::all_reduce(in[0], o);
  }
  if (op == "AllGather") return comm::all_gather(in[0], options<comm::AllGatherOptions>(g, timeout));
  if (op == "ReduceScatter") {
    auto o = options<comm::ReduceScatterOptions>(g, timeout);
    o.op = reduce_op_of(n);
    return comm::reduce_scatter(in[0], o);
  }
  if (op == "Broadcast") {
    auto o = options<comm::BroadcastOptions>(g, timeout);
    o.root = int_attr(n, "root_rank");
    return comm::broadcast(in[0], o);
  }
  if (op == "AlltoAll") {
    auto o = options<comm::AllToAllOptions>(g, timeout);
    o.split_count = int_attr(n, "split_count");
    o.split_dim = int_attr(n, "split_dim");
    o.concat_dim = int_attr(n, "concat_dim");
    return comm::all_to_all(in[0], o);
  }
  if (op == "NeighborExchange") return neighbor_exchange(n, in[0], g, timeout);
  if (op == "NeighborExchangeV2") {
    auto o = options<comm::NeighborExchangeV2Options>(g, timeout);
    o.send_rank_ids = ranks(n, "send_rank_ids");
    o.send_lens = n.attrs.get_ints("send_lens");
    o.recv_rank_ids = ranks(n, "recv_rank_ids");
    o.recv_lens = n.attrs.get_ints("recv_lens");
    o.data_format = n.attrs.get_str("data_format", "NCHW");
    return comm::neighbor_exchange_v2(in[0], o);
  }
  if (op == "NeighborExchangeV2Grad") {
    auto o = options<NeighborExchangeV2GradOptions>(g, timeout);
    o.send_rank_ids = ranks(n, "send_rank_ids");
    o.send_lens = n.attrs.get_ints("send_lens");
    o.recv_rank_ids = ranks(n, "recv_rank_ids");
    o.recv_lens = n.attrs.get_ints("recv_lens");
    return neighbor_exchange_v2_grad(in[0], o);
  }
  if (op == "Send") {
    comm::SendOptions o;
    o.group = g;
    o.dest = int_attr(n, "dest_rank");
    o.sr_tag = n.attrs.get_int("sr_tag");
    comm::send(in[0], o);
    return Tensor(n.shape, n.dtype);  // the token, 0
  }
  if (op == "Receive") {
    auto o = options<comm::ReceiveOptions>(g, timeout);
    o.src = int_attr(n, "src_rank");
    o.sr_tag = n.attrs.get_int("sr_tag");
    o.shape = n.shape;
    o.dtype = n.dtype;
    return comm::receive(o);
  }
  SF_THROW(InvalidArgument, "{}: not a collective op", node_label(n));
}

}  // namespace

Tensor run_collective(const Node& n, const std::vector<Tensor>& inputs, const comm::Group& group,
                      milliseconds timeout) {
  Tensor out = dispatch(n, inputs, group, timeout);
  SF_ENFORCE(out.shape() == n.shape && out.dtype() == n.dtype, ShapeError,
             "{}: the collective returned {}, the graph expects {}{}", node_label(n), out.describe(),
             dtype_name(n.dtype), shape_str(n.shape));
  return out;
}

}  // namespace sf
