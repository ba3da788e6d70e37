// The I/O thread's loop, its links to the peers (DEALER, monitor, client handshake) and the
// sending side: outbox, credit, close notices (comm/zmq/engine.h).
#include "comm/zmq/engine.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "comm/buffer_pool.h"
#include "core/error.h"

namespace sf::comm::zmq {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Fabric::Engine::Engine(Fabric& f, std::vector<std::string> endpoints)
    : f_(f), c_(*f.counters_), limits_{f.size_, f.opts_.max_payload_bytes}, router_fd_(f.router_.fd()) {
  links_.resize(f.size_);
  for (int p = 0; p < f.size_; ++p) {
    if (p == f.rank_) continue;
    links_[p] = std::make_unique<Link>(f.opts_.credit_bytes);
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

std::string Fabric::Engine::address_of(const Message& m) const {
  const std::string a = m.peer_address();
  if (a.empty()) return "an unknown address";
  if (a[0] == ':') return "local process (uid:gid:pid " + a.substr(1) + ")";  // ipc: SO_PEERCRED
  return a;
}

void Fabric::Engine::loop() {
  // One poll() over raw descriptors: the eventfd, and each socket's ZMQ_FD, which libzmq makes
  // readable when commands reach the socket (a message arriving among them). A socket is
  // drained until EAGAIN before its descriptor is trusted again. A send processes commands
  // too and may consume the wake-up of a message that arrived meanwhile, so the ROUTER is
  // drained again after every send on it; a DEALER only carries the handshake (read in its
  // drain loop) and credit grants, so it is drained again when a message waits for credit.
  // (zmq_poll does these checks with two poll()s and a getpid() per socket on every call:
  // about twice the system calls per message, which cost much on these virtual machines.)
  std::vector<pollfd> fds;
  std::vector<int> owner;  // per descriptor: -1 wake fd, -2 router, p for a dealer, -3 - p for a monitor
  for (;;) {
    fds.clear();
    owner.clear();
    bool pending = router_pending_;
    auto watch = [&](int fd, int who) {
      fds.push_back({fd, POLLIN, 0});
      owner.push_back(who);
    };
    watch(f_.wake_fd_, -1);
    if (f_.router_) watch(router_fd_, -2);
    auto timeout = milliseconds(-1);
    const auto now = Clock::now();
    for (int p = 0; p < f_.size_; ++p) {
      if (!links_[p] || links_[p]->gone) continue;
      Link& l = *links_[p];
      watch(l.dealer_fd, p);
      watch(l.monitor_fd, -3 - p);
      pending = pending || l.dealer_pending || l.monitor_pending;
      if (l.lost_at) {
        const auto left = std::chrono::ceil<milliseconds>(*l.lost_at - now);
        timeout = timeout.count() < 0 ? left : std::min(timeout, left);
      }
    }
    if (shutdown_seen_) {
      const auto left = std::chrono::ceil<milliseconds>(linger_end_ - now);
      timeout = timeout.count() < 0 ? left : std::min(timeout, left);
    }
    const int wait_ms = pending ? 0 : timeout.count() < 0 ? -1 : static_cast<int>(std::max<long>(timeout.count(), 0));
    if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR)
      SF_THROW(Error, "zmq: poll failed: {}", std::strerror(errno));
    for (size_t i = 0; i < fds.size(); ++i) {
      const bool fired = fds[i].revents != 0;
      const int who = owner[i];
      if (who == -1) {
        if (fired) take_requests();
      } else if (who == -2) {
        if (fired || router_pending_) router_pending_ = !on_router();
      } else {
        const int p = who >= 0 ? who : -3 - who;
        Link& l = *links_[p];
        if (l.gone) continue;
        if (who >= 0 && (fired || l.dealer_pending)) l.dealer_pending = !on_dealer(p);
        if (who < 0 && (fired || l.monitor_pending)) l.monitor_pending = !on_monitor(p);
      }
    }
    const auto after = Clock::now();
    for (int p = 0; p < f_.size_; ++p) {
      if (!links_[p]) continue;
      Link& l = *links_[p];
      if (!l.gone && l.lost_at && after >= *l.lost_at)
        drop_link(p, true,
                  fmt::format("lost its connection without a close notice (killed, or silent past the {} ms "
                              "heartbeat timeout)",
                              f_.opts_.heartbeat_timeout.count()));
      pump(p);
    }
    if (shutdown_seen_ && (flushed() || Clock::now() >= linger_end_)) return;
  }
}

void Fabric::Engine::take_requests() {
  uint64_t v;
  [[maybe_unused]] auto n = ::read(f_.wake_fd_, &v, sizeof v);  // one read resets an eventfd
  std::deque<Outgoing> batch;
  bool close_now = false;
  {
    std::lock_guard<std::mutex> lock(f_.mu_);
    batch.swap(f_.outbox_);
    close_now = f_.close_requested_ && !closing_;
    if (f_.shutdown_ && !shutdown_seen_) {
      shutdown_seen_ = true;
      linger_end_ = Clock::now() + f_.opts_.linger;
    }
  }
  for (Outgoing& o : batch) {  // messages posted before close() go first
    Link& l = *links_[o.dst];
    if (l.gone)
      BufferPool::global().release(o.t);
    else
      l.queue.push_back(std::move(o));
  }
  if (close_now) begin_close();
}

void Fabric::Engine::begin_close() {
  closing_ = true;
  for (int p = 0; p < f_.size_; ++p) {
    if (!links_[p] || links_[p]->gone) continue;
    Link& l = *links_[p];
    if (!l.out_up) {  // never linked: nothing can be sent
      release_queue(l);
      continue;
    }
    l.queue.push_back(Outgoing{p, 0, Tensor()});  // an undefined tensor marks the close notice
  }
}

void Fabric::Engine::pump(int p) {
  if (!links_[p]) return;
  Link& l = *links_[p];
  while (!l.queue.empty() && l.out_up && !l.gone && !l.lost_at) {
    Outgoing& o = l.queue.front();
    Header h;
    h.from = f_.rank_;
    if (!o.t.defined()) {
      h.kind = Kind::kClose;
      Message hm = header_frame(h);
      send_frame(l.dealer, hm, false);
      l.queue.pop_front();
      continue;
    }
    const uint64_t cost = charge(o.t.nbytes());
    if (!closing_ && !l.window.can_send(cost)) {  // closing: flush regardless
      if (!l.waiting_credit) ++c_.credit_waits;
      l.waiting_credit = true;
      l.dealer_pending = true;  // a grant may be waiting unannounced (see loop())
      return;
    }
    l.waiting_credit = false;
    h.kind = Kind::kData;
    h.tag = o.tag;
    h.dtype = o.t.dtype();
    h.shape = o.t.shape();
    h.nbytes = o.t.nbytes();
    Message hm = header_frame(h);
    Message pm = Message::borrowing(o.t);  // takes over the message's pooled reference
    l.queue.pop_front();
    if (!send_frame(l.dealer, hm, true) || !send_frame(l.dealer, pm, false)) {
      // No connection left: the peer is closing or lost; the loss grace tells which. The
      // message is dropped either way (comm/transport.h).
      l.lost_at = Clock::now() + kLossGrace;
      return;
    }
    l.window.on_send(cost);
    ++c_.messages_sent;
    c_.bytes_sent += h.nbytes;
  }
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
    } else if (h.kind == Kind::kCredit && l.out_up) {
      l.window.on_grant(h.nbytes);
    } else if (h.kind == Kind::kChallenge && !l.out_up && l.hs) {
      try {
        Message proof = header_frame(l.hs->answer(h));
        l.hs.reset();
        if (!send_frame(l.dealer, proof, false)) throw IoError("the connection is gone");
        l.out_up = true;
        f_.set_linked(p, true);
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

void Fabric::Engine::release_queue(Link& l) {
  for (Outgoing& o : l.queue) BufferPool::global().release(o.t);
  l.queue.clear();
}

void Fabric::Engine::drop_link(int p, bool lost, const std::string& why) {
  Link& l = *links_[p];
  if (l.gone) return;
  l.gone = true;
  release_queue(l);
  if (lost) ++c_.peers_lost;
  f_.mark_src_closed(p, why);
  // Nothing more will be sent to it; close at once, so a frozen peer holds nothing back.
  if (l.dealer) {
    l.dealer.set(ZMQ_LINGER, 0);
    zmq_socket_monitor(l.dealer.get(), nullptr, 0);
  }
  l.monitor.close();
  l.dealer.close();
}

bool Fabric::Engine::flushed() const {
  return std::all_of(links_.begin(), links_.end(), [](const auto& l) { return !l || l->gone || l->queue.empty(); });
}

void Fabric::Engine::finish() {
  for (auto& l : links_) {
    if (!l) continue;
    release_queue(*l);
    if (l->dealer) zmq_socket_monitor(l->dealer.get(), nullptr, 0);
    l->monitor.close();
    l->dealer.close();  // with its linger: the close notice may still be on its way
  }
  f_.router_.close();
}

}  // namespace sf::comm::zmq
