// The lanes side of the I/O thread (comm/zmq/lane.h): offering this rank's lane to a proven
// peer, opening the lane a peer offers, admitting greetings on the listener, and reading
// every incoming lane into the inboxes.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include <shardflow/comm/zmq/engine.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

void Fabric::Engine::offer_lane(int p) {
  const Link& l = *links_[p];
  Header h;
  h.kind = Kind::kLane;
  h.from = f_.rank_;
  h.auth.assign(f_.tokens_[p].begin(), f_.tokens_[p].end());
  h.endpoints = {f_.lane_endpoint_};
  Message id(l.rid.data(), l.rid.size());
  Message offer = header_frame(h);
  router_pending_ = true;
  if (send_frame(f_.router_, id, true)) send_frame(f_.router_, offer, false);  // else the peer is gone already
}

void Fabric::Engine::open_lane(int p, const Header& offer) {
  LaneToken token;
  std::copy(offer.auth.begin(), offer.auth.end(), token.begin());
  try {
    f_.out_lanes_[p]->attach(lane_connect(offer.endpoints[0], f_.rank_, token, f_.opts_.socket_buffer_bytes));
  } catch (const std::exception& e) {
    ++c_.refused_peers;
    log(fmt::format("could not open the lane rank {} offered: {}", p, e.what()));
    drop_link(p, true, fmt::format("offered a lane that could not be opened ({})", e.what()));
    return;
  }
  f_.set_linked(p, true);
  f_.out_lanes_[p]->flush(f_.lane_counters_);  // anything posted before the lane was up
}

void Fabric::Engine::on_listener() {
  for (;;) {
    sockaddr_storage from{};
    socklen_t len = sizeof from;
    const int fd = ::accept4(f_.lane_fd_, reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or an error the next poll reports again
    greetings_.push_back({fd, lane_peer_address(fd, from), Clock::now()});
    // Many connections that say nothing: the oldest goes, so the listener stays bounded.
    if (greetings_.size() > kMaxGreetings) refuse_greeting(0, "too many connections waiting to greet");
  }
}

void Fabric::Engine::refuse_greeting(size_t i, const std::string& why) {
  Greeting& g = greetings_[i];
  if (g.fd < 0) return;
  ++c_.refused_peers;
  log(fmt::format("refused a lane connection from {}: {}", g.address, why));
  ::close(g.fd);
  g.fd = -1;
}

void Fabric::Engine::expire_greetings(Clock::time_point now) {
  for (size_t i = 0; i < greetings_.size(); ++i)
    if (greetings_[i].fd >= 0 && now - greetings_[i].since >= f_.opts_.connect_timeout)
      refuse_greeting(i, fmt::format("no greeting within {} ms", f_.opts_.connect_timeout.count()));
  std::erase_if(greetings_, [](const Greeting& g) { return g.fd < 0; });
}

void Fabric::Engine::on_greeting(size_t i) {
  Greeting& g = greetings_[i];
  if (g.fd < 0) return;
  const ssize_t n = ::recv(g.fd, g.bytes.data() + g.got, g.bytes.size() - g.got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) return refuse_greeting(i, "closed before its greeting");
  g.got += static_cast<size_t>(n);
  if (g.got < g.bytes.size()) return;
  const int p = lane_greeting_rank(g.bytes.data());
  if (p < 0) return refuse_greeting(i, "not a shardflow lane greeting");
  if (p == f_.rank_ || p >= f_.size_) return refuse_greeting(i, fmt::format("it claims rank {}", p));
  if (links_[p]->gone) return refuse_greeting(i, fmt::format("rank {} is gone", p));
  if (!lane_greeting_has(g.bytes.data(), f_.tokens_[p]))
    return refuse_greeting(i, fmt::format("it claims rank {} without the token offered to it", p));
  if (!f_.in_lanes_[p]->attach(g.fd, f_.opts_.socket_buffer_bytes)) return refuse_greeting(i, fmt::format("rank {} has its lane already", p));
  g.fd = -1;  // the lane owns it now
  f_.set_linked(p, false);
}

void Fabric::Engine::on_lane(int p) {
  std::optional<LaneEnd> end;
  f_.in_lanes_[p]->read(kLaneReadBudget, f_.lane_events(p, end));  // skipped if a caller holds it
  if (end) drop_link(p, end->lost, end->why);
}

}  // namespace sf::comm::zmq
