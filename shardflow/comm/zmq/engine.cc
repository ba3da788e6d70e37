// The I/O thread's loop and its links to the peers: DEALER, monitor, client handshake
// (comm/zmq/engine.h).
#include <shardflow/comm/zmq/engine.h>

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Fabric::Engine::Engine(Fabric& f, std::vector<std::string> endpoints)
    : f_(f), c_(*f.counters_), limits_{f.size_, f.opts_.max_payload_bytes}, router_fd_(f.router_.fd()) {
  links_.resize(f.size_);
  for (int p = 0; p < f.size_; ++p) {
    if (p == f.rank_) continue;
    links_[p] = std::make_unique<Link>();
    links_[p]->endpoint = std::move(endpoints[p]);
    try {
      setup_link(p);
    } catch (const std::exception& e) {
      drop_link(p, true, fmt::format("could not be reached at {}: {}", links_[p]->endpoint, e.what()));
    }
  }
}

void Fabric::Engine::setup_link(int p) {
  Link& l = *links_[p];
  const ZmqOptions& o = f_.opts_;
  l.dealer = Socket(f_.ctx_, ZMQ_DEALER);
  l.dealer.set(ZMQ_SNDHWM, 0);  // unbounded: credit.h bounds what is in flight
  l.dealer.set(ZMQ_RCVHWM, 0);
  l.dealer.set(ZMQ_LINGER, static_cast<int>(o.linger.count()));
  l.dealer.set(ZMQ_RECONNECT_IVL, -1);  // a dropped link means a lost peer: never reconnect
  l.dealer.set(ZMQ_HEARTBEAT_IVL, static_cast<int>(o.heartbeat_interval.count()));
  l.dealer.set(ZMQ_HEARTBEAT_TIMEOUT, static_cast<int>(o.heartbeat_timeout.count()));
  l.dealer.set(ZMQ_HEARTBEAT_TTL, static_cast<int>(o.heartbeat_timeout.count()));
  const std::string mon = fmt::format("inproc://sf-zmq-monitor-{}-{}", static_cast<const void*>(&f_), p);
  if (zmq_socket_monitor(l.dealer.get(), mon.c_str(), ZMQ_EVENT_DISCONNECTED) != 0)
    SF_THROW(Error, "zmq: zmq_socket_monitor failed: {}", zmq_strerror(zmq_errno()));
  l.monitor = Socket(f_.ctx_, ZMQ_PAIR);
  l.monitor.set(ZMQ_LINGER, 0);
  l.monitor.connect(mon);
  l.dealer.connect(l.endpoint);
  l.dealer_fd = l.dealer.fd();
  l.monitor_fd = l.monitor.fd();
  l.hs = std::make_unique<ClientHandshake>(f_.key_, Purpose::kLink, f_.rank_, p);
  Message hello = header_frame(l.hs->hello());
  if (!send_frame(l.dealer, hello, false)) SF_THROW(Error, "zmq: could not queue the hello");
}

void Fabric::Engine::log(const std::string& what) const {
  std::fprintf(stderr, "shardflow zmq: rank %d (%s): %s\n", f_.rank_, f_.endpoint_.c_str(), what.c_str());
  std::fflush(stderr);
}

std::string Fabric::Engine::address_of(const Message& m) const { return m.peer_description(); }

void Fabric::Engine::loop() {
  // One poll() over raw descriptors: the eventfd, each socket's ZMQ_FD, which libzmq makes
  // readable when commands reach the socket (a message arriving among them), the lane listener,
  // greetings in progress, every incoming lane, and the outgoing lanes that have bytes left.
  // A zmq socket is drained until EAGAIN before its descriptor is trusted again; a send on
  // the ROUTER processes commands too and may consume the wake-up of a message that arrived
  // meanwhile, so the ROUTER is drained again after every send on it. (zmq_poll does these
  // checks with two poll()s and a getpid() per socket on every call: about twice the system
  // calls, which cost much on these virtual machines.) Lanes are plain sockets, level-triggered.
  enum class Who : uint8_t { kWake, kRouter, kDealer, kMonitor, kListener, kGreeting, kLaneIn, kLaneOut };
  struct Owner {
    Who who;
    size_t index;  // the peer's rank, or the greeting's index
  };
  std::vector<pollfd> fds;
  std::vector<Owner> owner;
  for (;;) {
    fds.clear();
    owner.clear();
    bool pending = router_pending_;
    auto watch = [&](int fd, short events, Who who, size_t index) {
      fds.push_back({fd, events, 0});
      owner.push_back({who, index});
    };
    watch(f_.wake_fd_, POLLIN, Who::kWake, 0);
    if (f_.router_) watch(router_fd_, POLLIN, Who::kRouter, 0);
    if (f_.lane_fd_ >= 0) watch(f_.lane_fd_, POLLIN, Who::kListener, 0);
    for (size_t i = 0; i < greetings_.size(); ++i) watch(greetings_[i].fd, POLLIN, Who::kGreeting, i);
    auto timeout = milliseconds(-1);
    auto until = [&](Clock::time_point t, Clock::time_point now) {
      const auto left = std::chrono::ceil<milliseconds>(t - now);
      timeout = timeout.count() < 0 ? left : std::min(timeout, left);
    };
    const auto now = Clock::now();
    const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
    if (!greetings_.empty()) until(greetings_.front().since + f_.opts_.connect_timeout, now);
    for (int p = 0; p < f_.size_; ++p) {
      if (!links_[p] || links_[p]->gone) continue;
      Link& l = *links_[p];
      watch(l.dealer_fd, POLLIN, Who::kDealer, p);
      watch(l.monitor_fd, POLLIN, Who::kMonitor, p);
      // A lane a receiver holds is watched again once it has let go (it wakes this thread) and
      // the grace after that has passed.
      int64_t recheck_us = -1;
      if (const int fd = f_.in_lanes_[p]->pollable_fd(now_us, recheck_us); fd >= 0)
        watch(fd, POLLIN, Who::kLaneIn, p);
      else if (recheck_us >= 0)
        until(now + std::chrono::microseconds(recheck_us - now_us), now);
      OutLane& out = *f_.out_lanes_[p];
      if (!out.idle() && out.fd() >= 0) watch(out.fd(), POLLOUT, Who::kLaneOut, p);
      pending = pending || l.dealer_pending || l.monitor_pending;
      if (l.lost_at) until(*l.lost_at, now);
    }
    if (shutdown_seen_) until(linger_end_, now);
    const int wait_ms = pending ? 0 : timeout.count() < 0 ? -1 : static_cast<int>(std::max<long>(timeout.count(), 0));
    if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR)
      SF_THROW(Error, "zmq: poll failed: {}", std::strerror(errno));
    const size_t greetings_before = greetings_.size();
    for (size_t i = 0; i < fds.size(); ++i) {
      const bool fired = fds[i].revents != 0;
      const size_t k = owner[i].index;
      const Who who = owner[i].who;
      const bool per_peer = who == Who::kDealer || who == Who::kMonitor || who == Who::kLaneIn || who == Who::kLaneOut;
      Link* l = per_peer ? links_[k].get() : nullptr;
      if (l && l->gone) continue;  // dropped earlier in this pass
      switch (who) {
        case Who::kWake:
          if (fired) take_requests();
          break;
        case Who::kRouter:
          if (fired || router_pending_) router_pending_ = !on_router();
          break;
        case Who::kDealer:
          if (fired || l->dealer_pending) l->dealer_pending = !on_dealer(static_cast<int>(k));
          break;
        case Who::kMonitor:
          if (fired || l->monitor_pending) l->monitor_pending = !on_monitor(static_cast<int>(k));
          break;
        case Who::kListener:
          if (fired) on_listener();
          break;
        case Who::kGreeting:
          if (fired && k < greetings_before) on_greeting(k);
          break;
        case Who::kLaneIn:
          if (fired) on_lane(static_cast<int>(k));
          break;
        case Who::kLaneOut:
          if (fired) f_.out_lanes_[k]->flush(f_.lane_counters_);
          break;
      }
    }
    // Greetings finished or refused above were marked (fd < 0); forget them now, so the
    // indexes used during the pass stayed valid.
    std::erase_if(greetings_, [](const Greeting& g) { return g.fd < 0; });
    const auto after = Clock::now();
    expire_greetings(after);
    for (int p = 0; p < f_.size_; ++p) {
      if (!links_[p]) continue;
      Link& l = *links_[p];
      if (!l.gone && l.lost_at && after >= *l.lost_at)
        drop_link(p, true,
                  fmt::format("lost its connection without a close notice (killed, or silent past the {} ms "
                              "heartbeat timeout)",
                              f_.opts_.heartbeat_timeout.count()));
    }
    if (shutdown_seen_ && (flushed() || Clock::now() >= linger_end_)) return;
  }
}

void Fabric::Engine::take_requests() {
  uint64_t v;
  [[maybe_unused]] auto n = ::read(f_.wake_fd_, &v, sizeof v);  // one read resets an eventfd
  std::vector<LaneEnd> ends;
  {
    std::lock_guard<std::mutex> lock(f_.mu_);
    if (f_.shutdown_ && !shutdown_seen_) {
      shutdown_seen_ = true;
      linger_end_ = Clock::now() + f_.opts_.linger;
    }
    ends.swap(f_.lane_ends_);
  }
  for (const LaneEnd& e : ends) drop_link(e.peer, e.lost, e.why);  // lanes a caller saw end
}

bool Fabric::Engine::on_dealer(int p) {
  Link& l = *links_[p];
  for (int k = 0; k < 64; ++k) {
    if (!l.dealer || l.gone) return true;
    const size_t count = recv_parts(l.dealer, parts_, 1);
    if (count == 0) return true;
    if (count != 1) {
      ++c_.bad_frame_count;
      continue;
    }
    Header h;
    try {
      h = decode_header(parts_[0].data(), parts_[0].size(), limits_);
    } catch (const MalformedFrame& e) {
      c_.count(e.defect());
      continue;
    }
    if (h.from != p) {
      ++c_.bad_sender;
    } else if (h.kind == Kind::kLane && l.out_up && f_.out_lanes_[p]->fd() < 0) {
      open_lane(p, h);
    } else if (h.kind == Kind::kChallenge && !l.out_up && l.hs) {
      try {
        Message proof = header_frame(l.hs->answer(h));
        l.hs.reset();
        if (!send_frame(l.dealer, proof, false)) throw IoError("the connection is gone");
        l.out_up = true;  // the peer now offers its lane (open_lane)
      } catch (const std::exception& e) {
        ++c_.refused_peers;
        log(fmt::format("refused rank {}'s endpoint {}: {}", p, l.endpoint, e.what()));
        drop_link(p, true, fmt::format("failed the handshake at {}: {}", l.endpoint, e.what()));
      }
    } else {
      ++c_.bad_header;
    }
  }
  return false;
}

bool Fabric::Engine::on_monitor(int p) {
  Link& l = *links_[p];
  while (l.monitor) {
    const size_t count = recv_parts(l.monitor, parts_, 2);
    if (count == 0) return true;
    if (parts_.empty() || parts_[0].size() < 6) continue;
    uint16_t event = 0;
    std::memcpy(&event, parts_[0].data(), 2);
    if (event == ZMQ_EVENT_DISCONNECTED && !l.gone && !l.lost_at) l.lost_at = Clock::now() + kLossGrace;
  }
  return true;
}

void Fabric::Engine::drop_link(int p, bool lost, const std::string& why) {
  Link& l = *links_[p];
  if (l.gone) return;
  l.gone = true;
  f_.out_lanes_[p]->shut();
  f_.in_lanes_[p]->shut();
  if (lost) ++c_.peers_lost;
  f_.mark_src_closed(p, lost, why);
  // Nothing more will be sent to it; close at once, so a frozen peer holds nothing back.
  if (l.dealer) {
    l.dealer.set(ZMQ_LINGER, 0);
    zmq_socket_monitor(l.dealer.get(), nullptr, 0);
  }
  l.monitor.close();
  l.dealer.close();
}

bool Fabric::Engine::flushed() const {
  for (const auto& lane : f_.out_lanes_)
    if (lane && !lane->idle() && lane->fd() >= 0) return false;
  return true;
}

void Fabric::Engine::finish() {
  for (auto& l : links_) {
    if (!l) continue;
    if (l->dealer) zmq_socket_monitor(l->dealer.get(), nullptr, 0);
    l->monitor.close();
    l->dealer.close();
  }
  for (Greeting& g : greetings_)
    if (g.fd >= 0) ::close(g.fd);
  greetings_.clear();
  for (auto& lane : f_.out_lanes_)
    if (lane) lane->shut();
  for (auto& lane : f_.in_lanes_)
    if (lane) lane->shut();
  f_.router_.close();
}

}  // namespace sf::comm::zmq
