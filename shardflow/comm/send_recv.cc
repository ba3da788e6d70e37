#include <shardflow/comm/send_recv.h>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/detail/blocks.h>
#include <shardflow/comm/detail/call.h>

namespace sf::comm {

namespace {

void check_peer(std::string_view op, const Group& g, const char* what, int peer, int64_t sr_tag) {
  SF_ENFORCE(peer >= 0 && peer < g.size(), InvalidArgument, "{} (group '{}'): {} {} is outside the group's ranks [0, {})",
             op, g.name(), what, peer, g.size());
  SF_ENFORCE(peer != g.rank(), InvalidArgument, "{} (group '{}'): {} {} is this rank itself", op, g.name(), what, peer);
  SF_ENFORCE(sr_tag >= 0 && sr_tag <= int64_t{UINT32_MAX}, InvalidArgument,
             "{} (group '{}'): sr_tag {} is outside [0, 2^32)", op, g.name(), sr_tag);
}

}  // namespace

void send(const Tensor& input, const SendOptions& o) {
  detail::check_group("Send", o.group);
  detail::check_input("Send", input);
  check_peer("Send", o.group, "dest", o.dest, o.sr_tag);
  // A pooled copy, viewed with the input's shape, so the receiver can check it.
  Tensor msg = detail::pooled_copy(input, 0, input.numel());
  if (input.numel() > 0) msg = msg.view(input.shape());
  o.group.transport().send(o.group.world_rank(o.dest), p2p_tag(o.group.id(), static_cast<uint32_t>(o.sr_tag)), msg);
}

Tensor receive(const ReceiveOptions& o) {
  detail::check_common("Receive", o.group, o.timeout);
  check_peer("Receive", o.group, "src", o.src, o.sr_tag);
  Tensor expect(o.shape, o.dtype);  // validates the shape before waiting
  const int world_src = o.group.world_rank(o.src);
  Tensor got;
  try {
    got = o.group.transport().recv(world_src, p2p_tag(o.group.id(), static_cast<uint32_t>(o.sr_tag)), o.timeout);
  } catch (const PeerLost& e) {
    throw PeerLost(world_src,
                   fmt::format("Receive (group '{}', sr_tag {}, rank {}): nothing from rank {}: {}", o.group.name(),
                               o.sr_tag, o.group.rank(), world_src, e.what()),
                   SF_WHERE);
  }
  const bool ok = got.dtype() == o.dtype && got.numel() == expect.numel() && (got.numel() == 0 || got.shape() == o.shape);
  const std::string got_desc = got.describe();
  if (ok) detail::copy_elems(expect, 0, got, 0, got.numel());
  BufferPool::global().release(got);
  SF_ENFORCE(ok, ShapeError, "Receive (group '{}', sr_tag {}): rank {} sent {} but this rank expects {}",
             o.group.name(), o.sr_tag, world_src, got_desc, expect.describe());
  return expect;
}

}  // namespace sf::comm
