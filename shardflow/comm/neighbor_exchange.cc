#include <shardflow/comm/neighbor_exchange.h>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/detail/neighbor_message.h>
#include <shardflow/core/brief.h>

namespace sf::comm {

namespace {

constexpr std::string_view kOp = "NeighborExchange";

void check_peer(const NeighborExchangeOptions& o, const char* list, size_t i, int id) {
  const Group& g = o.group;
  SF_ENFORCE(id >= 0 && id < g.size(), InvalidArgument,
             "{} (group '{}'): {}[{}] = {} is outside the group's ranks [0, {})", kOp, g.name(), list, i, id, g.size());
  SF_ENFORCE(id != g.rank(), InvalidArgument, "{} (group '{}'): {}[{}] = {} is this rank itself", kOp, g.name(), list,
             i, id);
}

void validate(const std::vector<Tensor>& inputs, const NeighborExchangeOptions& o) {
  detail::check_common(kOp, o.group, o.timeout);
  const std::string& g = o.group.name();
  SF_ENFORCE(o.send_rank_ids.size() == o.send_shapes.size(), InvalidArgument,
             "{} (group '{}'): send_rank_ids has {} entries but send_shapes has {}; they must be equal", kOp, g,
             o.send_rank_ids.size(), o.send_shapes.size());
  SF_ENFORCE(o.recv_rank_ids.size() == o.recv_shapes.size(), InvalidArgument,
             "{} (group '{}'): recv_rank_ids has {} entries but recv_shapes has {}; they must be equal", kOp, g,
             o.recv_rank_ids.size(), o.recv_shapes.size());
  SF_ENFORCE(inputs.size() == o.send_rank_ids.size(), InvalidArgument,
             "{} (group '{}'): {} input tensors for {} send_rank_ids; there must be one input per send rank", kOp, g,
             inputs.size(), o.send_rank_ids.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_peer(o, "send_rank_ids", i, o.send_rank_ids[i]);
    SF_ENFORCE(inputs[i].defined(), InvalidArgument, "{} (group '{}'): input {} is undefined", kOp, g, i);
    SF_ENFORCE(inputs[i].shape() == o.send_shapes[i], ShapeError,
               "{} (group '{}'): input {} is {} but send_shapes[{}] is {}; they must be equal", kOp, g, i,
               inputs[i].describe(), i, brief_shape(o.send_shapes[i]));
  }
  for (size_t j = 0; j < o.recv_rank_ids.size(); ++j) {
    check_peer(o, "recv_rank_ids", j, o.recv_rank_ids[j]);
    for (int64_t d : o.recv_shapes[j])
      SF_ENFORCE(d >= 0, ShapeError, "{} (group '{}'): recv_shapes[{}] = {} has a negative dim", kOp, g, j,
                 brief_shape(o.recv_shapes[j]));
  }
}

std::vector<Tensor> run(const std::vector<Tensor>& inputs, const NeighborExchangeOptions& o, uint32_t seq) {
  detail::Call call(kOp, o.group, seq, o.timeout);
  // Round 1: queue every input, as a pooled copy carrying its shape, for its target. Sends
  // never block, so no receive below can wait on a send of this rank.
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor msg = detail::shaped_message(inputs[i].shape(), inputs[i].dtype());
    detail::copy_elems(msg, 0, inputs[i], 0, inputs[i].numel());
    call.send(o.send_rank_ids[i], msg);
  }
  // Round 2: take one message per recv_rank_ids entry, in list order (FIFO per peer pairs the
  // k-th send to a peer with its k-th receive), checking each against its declared shape.
  std::vector<Tensor> outputs;
  outputs.reserve(o.recv_rank_ids.size());
  for (size_t j = 0; j < o.recv_rank_ids.size(); ++j) {
    const std::string what = fmt::format("recv_rank_ids[{}]", j);
    Tensor got = detail::recv_shaped(call, o.group, o.recv_rank_ids[j], 0, o.recv_shapes[j], o.recv_type, what);
    Tensor out(o.recv_shapes[j], o.recv_type);
    detail::copy_elems(out, 0, got, 0, got.numel());
    BufferPool::global().release(got);
    outputs.push_back(std::move(out));
  }
  return outputs;
}

}  // namespace

std::vector<Tensor> NeighborExchangeWork::get() {
  work_.get();  // waits; rethrows the exchange's error
  return *outputs_;
}

std::vector<Tensor> neighbor_exchange(const std::vector<Tensor>& inputs, const NeighborExchangeOptions& opts) {
  validate(inputs, opts);
  return run(inputs, opts, opts.group.next_sequence());
}

NeighborExchangeWork neighbor_exchange_async(const std::vector<Tensor>& inputs, const NeighborExchangeOptions& opts) {
  validate(inputs, opts);
  // As detail::submit_collective, for a list of tensors: the sequence number is taken now, in
  // program order, and the worker holds only an unowned group.
  const uint32_t seq = opts.group.next_sequence();
  NeighborExchangeOptions o = opts;
  o.group = opts.group.unowned();
  auto outputs = std::make_shared<std::vector<Tensor>>();
  Work work = detail::submit(opts.group, [inputs, o, seq, outputs] {
    *outputs = run(inputs, o, seq);
    return Tensor();
  });
  return NeighborExchangeWork(std::move(work), std::move(outputs));
}

}  // namespace sf::comm
