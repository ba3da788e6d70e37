// The ROUTER side of the I/O thread: the server half of each connection's handshake, the
// validation and counting of every arriving frame set, and the lane offer to proven peers.
#include <shardflow/comm/zmq/engine.h>

#include <cstring>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

bool Fabric::Engine::on_router() {
  for (int k = 0; k < 256; ++k) {  // bounded, so the other sockets get their turn
    const size_t count = recv_parts(f_.router_, parts_, 3);
    if (count == 0) return true;
    try {
      on_router_message(count);
    } catch (const std::exception& e) {  // nothing a peer sends may end the thread
      ++c_.bad_header;
      log(fmt::format("dropped a message: {}", e.what()));
    }
  }
  return false;
}

void Fabric::Engine::forget_refused() {
  // libzmq does not say when a ROUTER connection goes, so refused ones are forgotten in bulk:
  // one that speaks again is refused (and logged) again.
  std::erase_if(inbound_, [](const auto& kv) { return kv.second.refused; });
}

void Fabric::Engine::refuse(Inbound& in, const std::string& why) {
  if (in.refused) return;
  in.refused = true;
  ++c_.refused_peers;
  log(why);
}

void Fabric::Engine::on_router_message(size_t count) {
  const std::string rid(reinterpret_cast<const char*>(parts_[0].data()), parts_[0].size());
  if (inbound_.size() > kMaxConnections && !inbound_.count(rid)) forget_refused();
  Inbound& in = inbound_[rid];
  const int p = in.rank;  // -1 until the connection has proven the secret
  auto refuse_unproven = [&](const std::string& why) {
    if (p < 0) refuse(in, fmt::format("refused a connection from {}: {}", address_of(parts_[1]), why));
  };
  if (count < 2) {
    ++c_.bad_frame_count;
    if (p < 0 && !in.refused) refuse(in, "refused a connection: a message without a header");
    return;
  }
  Header h;
  try {
    h = decode_header(parts_[1].data(), parts_[1].size(), limits_);
  } catch (const MalformedFrame& e) {
    c_.count(e.defect());
    return refuse_unproven(e.what());
  }
  if (count != (h.kind == Kind::kData ? 3u : 2u)) {
    ++c_.bad_frame_count;
    return refuse_unproven(fmt::format("a {} message of {} frames", kind_name(h.kind), count - 1));
  }
  if (p < 0) return on_unproven(in, rid, h);
  // A proven connection has said all it has to say on the control plane: data and the close
  // notice travel on its lane (comm/zmq/lane.h).
  if (h.from != p)
    ++c_.bad_sender;
  else
    ++c_.bad_header;
}

void Fabric::Engine::on_unproven(Inbound& in, const std::string& rid, const Header& h) {
  const std::string who = address_of(parts_[1]);
  if (in.refused) {
    ++c_.unauthenticated;
    return;
  }
  if (h.kind == Kind::kHello && !in.hs) {
    in.hs = std::make_unique<ServerHandshake>(f_.key_, Purpose::kLink, f_.rank_);
    Message id(rid.data(), rid.size());
    Message ch = header_frame(in.hs->challenge(h));
    router_pending_ = true;
    if (send_frame(f_.router_, id, true)) send_frame(f_.router_, ch, false);
    return;
  }
  if (h.kind == Kind::kProof && in.hs) {
    const int p = h.from;
    if (!in.hs->accept(h))
      return refuse(in, fmt::format("refused a connection from {} claiming rank {}: it does not prove the job secret",
                                    who, p));
    if (p == f_.rank_ || !links_[p] || !links_[p]->rid.empty())
      return refuse(in, fmt::format("refused a connection from {}: rank {} is {}", who, p,
                                    p == f_.rank_ ? "this rank" : "already connected"));
    in.rank = p;
    links_[p]->rid = rid;
    offer_lane(p);
    return;
  }
  ++c_.unauthenticated;
  refuse(in, fmt::format("refused a connection from {}: a {} message before the handshake", who, kind_name(h.kind)));
}

}  // namespace sf::comm::zmq
