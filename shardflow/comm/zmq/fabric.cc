#include <shardflow/comm/zmq/fabric.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/zmq/engine.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Fabric::Fabric(int rank, int size, const std::string& bind_to, const ZmqOptions& opts)
    : rank_(rank), size_(size), opts_(opts), key_(opts.secret), counters_(std::make_unique<Counters>()) {
  SF_ENFORCE(size >= 1 && rank >= 0 && rank < size, InvalidArgument, "zmq: rank {} outside a world of {}", rank, size);
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
  lane_fd_ = lane_listen(endpoint_, lane_endpoint_);
  for (int r = 0; r < size; ++r) {
    tokens_.push_back(fresh_nonce());
    out_lanes_.push_back(r == rank ? nullptr : std::make_unique<OutLane>());
    in_lanes_.push_back(r == rank ? nullptr : std::make_unique<InLane>(r, HeaderLimits{size, opts.max_payload_bytes}));
  }
  Counters* c = counters_.get();
  lane_counters_.sent = [c](uint64_t bytes) {
    ++c->messages_sent;
    c->bytes_sent += bytes;
  };
  lane_counters_.deferred = [c] { ++c->deferred_sends; };
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  SF_ENFORCE(wake_fd_ >= 0, Error, "zmq: eventfd failed: {}", std::strerror(errno));
  for (int r = 0; r < size; ++r) inboxes_.push_back(std::make_unique<detail::Inbox>("zmq", rank, r));
  out_up_.assign(size, 0);
  in_up_.assign(size, 0);
  gone_.assign(size, 0);
  lost_.assign(size, 0);
}

Fabric::~Fabric() {
  close();
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  wake();
  if (thread_.joinable()) thread_.join();
  router_.close();
  if (endpoint_.rfind("ipc://", 0) == 0) ::unlink(endpoint_.c_str() + 6);  // libzmq 4.3 leaves the file
  out_lanes_.clear();  // never started, or the thread has shut them: drops what is left
  in_lanes_.clear();
  if (lane_fd_ >= 0) ::close(lane_fd_);
  lane_unlink(lane_endpoint_);
  ::close(wake_fd_);
  for (auto& b : inboxes_) b->release_all();
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
      if (p != rank_)
        mark_src_closed(p, true, fmt::format("is unreachable: rank {}'s zmq I/O thread failed ({})", rank_, ex.what()));
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

void Fabric::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_, &one, sizeof one);
}

void Fabric::post(int dst, Tag tag, const Tensor& t) {
  if (dst == rank_) {  // to itself: by reference, as the inproc fabric does
    deliver(dst, tag, t);
    return;
  }
  if (closed_.load()) {
    BufferPool::global().release(t);  // dropped: give the sender's reference back
    return;
  }
  // Written here, on the caller's thread; the I/O thread is woken only for what is left.
  if (out_lanes_[dst]->post(tag, t, rank_, lane_counters_)) wake();
}

void Fabric::deliver(int src, Tag tag, Tensor t) { inboxes_[src]->push(tag, std::move(t)); }

void Fabric::mark_src_closed(int src, bool lost, std::string why) {
  if (!inboxes_[src]->close_source(std::move(why))) return;
  {
    std::lock_guard<std::mutex> lock(link_mu_);
    gone_[src] = 1;
    lost_[src] = lost ? 1 : 0;
  }
  link_cv_.notify_all();
}

std::vector<int> Fabric::lost_peers() const {
  std::lock_guard<std::mutex> lock(link_mu_);
  std::vector<int> out;
  for (int p = 0; p < size_; ++p)
    if (lost_[p]) out.push_back(p);
  return out;
}

std::vector<int> Fabric::closed_peers() const {
  std::lock_guard<std::mutex> lock(link_mu_);
  std::vector<int> out;
  for (int p = 0; p < size_; ++p)
    if (gone_[p] && !lost_[p]) out.push_back(p);
  return out;
}

void Fabric::interrupt(int lost, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (interrupted_.load()) return;
    interrupt_rank_ = lost;
    interrupt_why_ = why;
    interrupted_.store(true);
  }
  wake();
}

void Fabric::clear_interrupt() {
  std::lock_guard<std::mutex> lock(mu_);
  interrupted_.store(false);
}

void Fabric::throw_if_interrupted(int src, Tag tag) const {
  if (!interrupted(tag)) return;
  std::lock_guard<std::mutex> lock(mu_);
  throw PeerLost(interrupt_rank_, fmt::format("zmq: rank {} {}; rank {} abandoned its receive from rank {} (tag {:#x})",
                                              interrupt_rank_, interrupt_why_, rank_, src, tag));
}

InLane::Events Fabric::lane_events(int p, std::optional<LaneEnd>& end) {
  InLane::Events ev;
  ev.message = [this, p](Tag tag, Tensor t) {
    ++counters_->messages_received;
    counters_->bytes_received += t.nbytes();
    deliver(p, tag, std::move(t));
  };
  ev.closed = [p, &end] { end = LaneEnd{p, false, "closed its endpoint"}; };
  ev.lost = [p, &end](const std::string& why) { end = LaneEnd{p, true, why}; };
  ev.malformed = [this, p, &end](const MalformedFrame& e) {
    counters_->count(e.defect());
    std::fprintf(stderr, "shardflow zmq: rank %d (%s): dropped rank %d's lane: %s\n", rank_, endpoint_.c_str(), p,
                 e.what());
    end = LaneEnd{p, true, fmt::format("sent a malformed frame on its lane ({})", e.what())};
  };
  return ev;
}

bool Fabric::read_lane_until(int src, Tag tag, Clock::time_point deadline) {
  InLane& lane = *in_lanes_[src];
  if (!lane.hold()) return false;
  const detail::Inbox& b = *inboxes_[src];
  std::optional<LaneEnd> end;
  const InLane::Events ev = lane_events(src, end);
  for (;;) {
    if (b.ready(tag) || interrupted(tag)) break;
    const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    // Each read sleeps at most kHeldSliceMs: a close() of this endpoint is seen within one.
    lane.read_held(kLaneReadBudget, ev);
    if (end || lane.done()) break;
  }
  lane.release();
  if (end) {
    mark_src_closed(src, end->lost, end->why);  // this receive, and every other waiting on src, fails now
    std::lock_guard<std::mutex> lock(mu_);
    lane_ends_.push_back(std::move(*end));
  }
  // The I/O thread drops the link if the lane ended; otherwise it watches the lane again once
  // the release grace has passed. (Measured: without this wake-up a 4 KiB ping-pong takes
  // 38-41 µs instead of 17-19 µs: the I/O thread then polls the lane and wakes with the
  // receiver on every arrival.)
  wake();
  return true;
}

Tensor Fabric::take(int src, Tag tag, milliseconds timeout) {
  detail::Inbox& b = *inboxes_[src];
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    throw_if_interrupted(src, tag);
    if (auto t = b.take(tag, Clock::now(), deadline, timeout)) return std::move(*t);
    // Read the lane ourselves; if another thread does, wait for what it delivers (or for the
    // lane to come free, within a short slice; short for this rank's own messages too, so that
    // an interrupt() is seen).
    if (src != rank_ && read_lane_until(src, tag, deadline)) continue;
    const auto until = Clock::now() + milliseconds(5);
    if (auto t = b.take(tag, until, deadline, timeout)) return std::move(*t);
  }
}

std::optional<Tensor> Fabric::poll(int src, Tag tag, milliseconds wait) {
  throw_if_interrupted(src, tag);
  // No deadline: the inbox gives back nothing at `until` instead of a timeout error.
  return inboxes_[src]->take(tag, Clock::now() + wait, Clock::time_point::max(), wait);
}

void Fabric::close() {
  if (closed_.exchange(true)) return;
  // A receive reading a lane itself sees the close within one kHeldSliceMs slice.
  // The close notice goes on every lane after the messages posted before it.
  bool left = false;
  for (auto& lane : out_lanes_)
    if (lane) left = lane->post_close(rank_, lane_counters_) || left;
  if (left) wake();
  for (auto& b : inboxes_) b->close_endpoint();  // wake receivers; drop what nobody will read now
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
  s.deferred_sends = c.deferred_sends;
  s.peers_lost = c.peers_lost;
  return s;
}

}  // namespace sf::comm::zmq
