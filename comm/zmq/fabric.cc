#include "comm/zmq/fabric.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "comm/buffer_pool.h"
#include "comm/zmq/credit.h"
#include "comm/zmq/header.h"
#include "core/error.h"

namespace sf::comm::zmq {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Fabric::Counters {
  std::atomic<uint64_t> refused_peers{0}, unauthenticated{0}, bad_frame_count{0}, bad_header{0}, bad_byte_count{0},
      oversized{0}, bad_sender{0}, messages_sent{0}, messages_received{0}, bytes_sent{0}, bytes_received{0},
      credit_waits{0}, peers_lost{0};

  void count(Defect d) {
    switch (d) {
      case Defect::kFrameCount: ++bad_frame_count; break;
      case Defect::kHeader: ++bad_header; break;
      case Defect::kByteCount: ++bad_byte_count; break;
      case Defect::kOversized: ++oversized; break;
      case Defect::kSender: ++bad_sender; break;
    }
  }
};

namespace {

Message header_frame(const Header& h) {
  const std::vector<uint8_t> bytes = encode_header(h);
  return Message(bytes.data(), bytes.size());
}

std::string kind_name(Kind k) {
  static const char* kNames[] = {"data", "close", "credit", "hello", "challenge", "proof", "join", "table"};
  return kNames[static_cast<int>(k)];
}

}  // namespace

// Everything the I/O thread owns; only that thread touches it.
class Fabric::Engine {
 public:
  Engine(Fabric& f, std::vector<std::string> endpoints);
  // Works until shutdown has been requested and the queues are sent (or the linger is over).
  void loop();
  // Closes every socket (their linger lets queued bytes leave during zmq_ctx_term).
  void finish();

 private:
  struct Link {  // this rank's view of one peer
    Socket dealer, monitor;
    std::string endpoint;
    std::unique_ptr<ClientHandshake> hs;
    bool out_up = false;  // our proof is sent: data may follow on the DEALER
    bool gone = false;    // closed or lost: sends to it are dropped
    std::optional<Clock::time_point> lost_at;  // connection dropped; lost then unless it closed
    std::deque<Outgoing> queue;                // waiting for the link or for credit
    bool waiting_credit = false;
    CreditWindow window;
    CreditReturn returns;
    std::string rid;  // routing id of its proven connection to our ROUTER
    int dealer_fd = -1, monitor_fd = -1;          // their ZMQ_FDs, for poll()
    bool dealer_pending = true, monitor_pending = true;  // not known to be drained (see loop())
    explicit Link(uint64_t credit) : window(credit), returns(credit) {}
  };
  struct Inbound {  // one connection to our ROUTER, by routing id
    std::unique_ptr<ServerHandshake> hs;
    int rank = -1;  // >= 0 once proven
    bool refused = false;
  };

  void setup_link(int p);
  void take_requests();
  void begin_close();
  // Each drains its socket and returns false if it stopped early (more may be waiting).
  bool on_router();
  void on_router_message(size_t count);
  void on_unproven(Inbound& in, const std::string& rid, const Header& h);
  bool on_dealer(int p);
  bool on_monitor(int p);
  void pump(int p);
  void grant(int p, uint64_t cost);
  void refuse(Inbound& in, const std::string& why);
  void deliver_data(int p, const Header& h, const Message& payload);
  // Drops the link: `lost` (no close notice) counts it and says so in receivers' errors.
  void drop_link(int p, bool lost, const std::string& why);
  void release_queue(Link& l);
  bool flushed() const;
  std::string address_of(const Message& m) const;
  void log(const std::string& what) const;

  Fabric& f_;
  Counters& c_;
  HeaderLimits limits_;
  std::vector<std::unique_ptr<Link>> links_;  // by rank; null for this rank
  std::unordered_map<std::string, Inbound> inbound_;
  std::vector<Message> parts_;
  int router_fd_ = -1;
  bool router_pending_ = true;
  bool closing_ = false;
  bool shutdown_seen_ = false;
  Clock::time_point linger_end_{};
};

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
  while (!l.queue.empty() && l.out_up && !l.gone) {
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
      drop_link(p, true, "refused a message (its connection is gone)");
      return;
    }
    l.window.on_send(cost);
    ++c_.messages_sent;
    c_.bytes_sent += h.nbytes;
  }
}

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

void Fabric::Engine::refuse(Inbound& in, const std::string& why) {
  if (in.refused) return;
  in.refused = true;
  ++c_.refused_peers;
  log(why);
}

void Fabric::Engine::on_router_message(size_t count) {
  const std::string rid(reinterpret_cast<const char*>(parts_[0].data()), parts_[0].size());
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
  // A proven peer's payload took credit whatever is wrong with it (comm/zmq/credit.h).
  auto return_credit = [&] {
    if (p >= 0) grant(p, charge(count >= 3 ? parts_[2].size() : 0));
  };
  Header h;
  try {
    h = decode_header(parts_[1].data(), parts_[1].size(), limits_);
  } catch (const MalformedFrame& e) {
    c_.count(e.defect());
    return_credit();
    return refuse_unproven(e.what());
  }
  if (count != (h.kind == Kind::kData ? 3u : 2u)) {
    ++c_.bad_frame_count;
    if (h.kind == Kind::kData) return_credit();
    return refuse_unproven(fmt::format("a {} message of {} frames", kind_name(h.kind), count - 1));
  }
  if (p < 0) return on_unproven(in, rid, h);
  if (h.kind == Kind::kData) {
    return_credit();
    if (h.from != p)
      ++c_.bad_sender;
    else if (parts_[2].size() != h.nbytes)
      ++c_.bad_byte_count;
    else
      deliver_data(p, h, parts_[2]);
  } else if (h.kind == Kind::kClose) {
    if (h.from != p)
      ++c_.bad_sender;
    else
      drop_link(p, false, "closed its endpoint");
  } else {
    ++c_.bad_header;  // handshake or rendezvous kinds have no place on a proven connection
  }
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
    f_.set_linked(p, false);
    return;
  }
  ++c_.unauthenticated;
  refuse(in, fmt::format("refused a connection from {}: a {} message before the handshake", who, kind_name(h.kind)));
}

void Fabric::Engine::deliver_data(int p, const Header& h, const Message& payload) {
  int64_t numel = 1;
  for (int64_t d : h.shape) numel *= d;
  Tensor t = BufferPool::global().acquire(h.dtype, numel).view(h.shape);
  if (h.nbytes) std::memcpy(t.raw(), payload.data(), h.nbytes);
  ++c_.messages_received;
  c_.bytes_received += h.nbytes;
  f_.deliver(p, h.tag, std::move(t));
}

void Fabric::Engine::grant(int p, uint64_t cost) {
  Link& l = *links_[p];
  const uint64_t bytes = l.returns.on_arrival(cost);
  if (!bytes || l.rid.empty()) return;
  Header h;
  h.kind = Kind::kCredit;
  h.from = f_.rank_;
  h.nbytes = bytes;
  Message id(l.rid.data(), l.rid.size());
  Message cm = header_frame(h);
  router_pending_ = true;
  if (send_frame(f_.router_, id, true)) send_frame(f_.router_, cm, false);  // unreachable: the peer is gone
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

// ---- Fabric ----

Fabric::Fabric(int rank, int size, const std::string& bind_to, const ZmqOptions& opts)
    : rank_(rank), size_(size), opts_(opts), key_(opts.secret), counters_(std::make_unique<Counters>()) {
  SF_ENFORCE(size >= 1 && rank >= 0 && rank < size, InvalidArgument, "zmq: rank {} outside a world of {}", rank, size);
  SF_ENFORCE(opts.credit_bytes > 0, InvalidArgument, "zmq: credit_bytes must be positive");
  SF_ENFORCE(opts.heartbeat_interval.count() > 0 && opts.heartbeat_timeout >= opts.heartbeat_interval,
             InvalidArgument, "zmq: heartbeat interval {} ms / timeout {} ms: both positive, timeout >= interval",
             opts.heartbeat_interval.count(), opts.heartbeat_timeout.count());
  router_ = Socket(ctx_, ZMQ_ROUTER);
  router_.set(ZMQ_SNDHWM, 0);
  router_.set(ZMQ_RCVHWM, 0);
  router_.set(ZMQ_LINGER, static_cast<int>(opts.linger.count()));
  router_.set(ZMQ_ROUTER_MANDATORY, 1);  // a reply to a vanished connection fails instead of vanishing
  // libzmq refuses (and disconnects) any frame over this before allocating it.
  const int64_t max_frame = static_cast<int64_t>(std::max<uint64_t>(opts.max_payload_bytes, 1 << 16));
  if (zmq_setsockopt(router_.get(), ZMQ_MAXMSGSIZE, &max_frame, sizeof max_frame) != 0)
    SF_THROW(Error, "zmq: ZMQ_MAXMSGSIZE failed: {}", zmq_strerror(zmq_errno()));
  router_.bind(bind_to);
  endpoint_ = router_.last_endpoint();
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  SF_ENFORCE(wake_fd_ >= 0, Error, "zmq: eventfd failed: {}", std::strerror(errno));
  for (int r = 0; r < size; ++r) inboxes_.push_back(std::make_unique<Inbox>());
  out_up_.assign(size, 0);
  in_up_.assign(size, 0);
  gone_.assign(size, 0);
}

Fabric::~Fabric() {
  close();
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  router_.close();
  if (endpoint_.rfind("ipc://", 0) == 0) ::unlink(endpoint_.c_str() + 6);  // libzmq 4.3 leaves the file
  for (Outgoing& o : outbox_) BufferPool::global().release(o.t);  // never started
  ::close(wake_fd_);
  for (auto& b : inboxes_) b->queues.release_all();
}

void Fabric::start(std::vector<std::string> endpoints) {
  SF_ENFORCE(static_cast<int>(endpoints.size()) == size_, InvalidArgument,
             "zmq: {} endpoints for a world of {}", endpoints.size(), size_);
  SF_ENFORCE(!thread_.joinable(), InvalidArgument, "zmq: the fabric of rank {} was started twice", rank_);
  thread_ = std::thread([this, eps = std::move(endpoints)]() mutable { run(std::move(eps)); });
}

void Fabric::run(std::vector<std::string> endpoints) {
  std::unique_ptr<Engine> e;
  try {
    e = std::make_unique<Engine>(*this, std::move(endpoints));
    e->loop();
  } catch (const std::exception& ex) {  // libzmq itself failed: this endpoint is dead
    std::fprintf(stderr, "shardflow zmq: rank %d: the I/O thread failed: %s\n", rank_, ex.what());
    for (int p = 0; p < size_; ++p)
      if (p != rank_) mark_src_closed(p, fmt::format("is unreachable: rank {}'s zmq I/O thread failed ({})", rank_, ex.what()));
  }
  if (e) e->finish();
}

std::vector<int> Fabric::wait_linked(Clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(link_mu_);
  auto missing = [&] {
    std::vector<int> out;
    for (int p = 0; p < size_; ++p)
      if (p != rank_ && (gone_[p] || !out_up_[p] || !in_up_[p])) out.push_back(p);
    return out;
  };
  link_cv_.wait_until(lock, deadline, [&] {
    for (int p = 0; p < size_; ++p)
      if (p != rank_ && !gone_[p] && !(out_up_[p] && in_up_[p])) return false;
    return true;
  });
  return missing();
}

void Fabric::set_linked(int peer, bool out) {
  {
    std::lock_guard<std::mutex> lock(link_mu_);
    (out ? out_up_ : in_up_)[peer] = 1;
  }
  link_cv_.notify_all();
}

void Fabric::post(int dst, Tag tag, const Tensor& t) {
  if (dst == rank_) {  // to itself: by reference, as the inproc fabric does
    deliver(dst, tag, t);
    return;
  }
  if (!closed_.load()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!close_requested_) {
      const bool wake = outbox_.empty();
      outbox_.push_back(Outgoing{dst, tag, t});
      if (wake) {
        const uint64_t one = 1;
        [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
      }
      return;
    }
  }
  BufferPool::global().release(t);  // dropped: give the sender's reference back
}

void Fabric::deliver(int src, Tag tag, Tensor t) {
  Inbox& b = *inboxes_[src];
  {
    std::lock_guard<std::mutex> lock(b.mu);
    if (!closed_.load()) {
      b.queues.push(tag, std::move(t));
      b.cv.notify_all();
      return;
    }
  }
  BufferPool::global().release(t);  // this endpoint has closed: drop
}

void Fabric::mark_src_closed(int src, std::string why) {
  Inbox& b = *inboxes_[src];
  {
    std::lock_guard<std::mutex> lock(b.mu);
    if (b.src_closed) return;
    b.src_closed = true;
    b.closed_why = std::move(why);
  }
  b.cv.notify_all();
  {
    std::lock_guard<std::mutex> lock(link_mu_);
    gone_[src] = 1;
  }
  link_cv_.notify_all();
}

Tensor Fabric::take(int src, Tag tag, milliseconds timeout) {
  Inbox& b = *inboxes_[src];
  const auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(b.mu);
  b.cv.wait_until(lock, deadline, [&] { return b.queues.has(tag) || b.src_closed || closed_.load(); });
  if (closed_.load())
    throw PeerLost(src,
                   fmt::format("zmq: rank {} has closed its own endpoint; cannot receive tag {:#x} from rank {}", rank_,
                               tag, src),
                   SF_WHERE);
  if (auto t = b.queues.pop(tag)) return std::move(*t);
  if (b.src_closed)
    throw PeerLost(src, fmt::format("zmq: rank {} {}; rank {} waited for tag {:#x}", src, b.closed_why, rank_, tag),
                   SF_WHERE);
  throw PeerLost(src,
                 fmt::format("zmq: no message from rank {} to rank {} with tag {:#x} within {} ms", src, rank_, tag,
                             timeout.count()),
                 SF_WHERE);
}

void Fabric::close() {
  if (closed_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    close_requested_ = true;
  }
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
  for (auto& b : inboxes_) {  // wake receivers; drop what nobody will read now
    detail::TagQueues dropped;
    {
      std::lock_guard<std::mutex> lock(b->mu);
      dropped = b->queues.take_all();
    }
    b->cv.notify_all();
    dropped.release_all();
  }
}

ZmqStats Fabric::stats() const {
  const Counters& c = *counters_;
  ZmqStats s;
  s.refused_peers = c.refused_peers;
  s.unauthenticated = c.unauthenticated;
  s.bad_frame_count = c.bad_frame_count;
  s.bad_header = c.bad_header;
  s.bad_byte_count = c.bad_byte_count;
  s.oversized = c.oversized;
  s.bad_sender = c.bad_sender;
  s.messages_sent = c.messages_sent;
  s.messages_received = c.messages_received;
  s.bytes_sent = c.bytes_sent;
  s.bytes_received = c.bytes_received;
  s.credit_waits = c.credit_waits;
  s.peers_lost = c.peers_lost;
  return s;
}

}  // namespace sf::comm::zmq
