#include <shardflow/comm/zmq/lane.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sodium.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <memory>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/core/error.h>

namespace sf::comm::zmq {

namespace {

// Gather at most this many buffers per sendmsg (the kernel takes up to IOV_MAX = 1024).
constexpr size_t kMaxIov = 64;

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

struct Parsed {
  bool ipc = false;
  std::string host, port, path;  // tcp: host (no brackets) and port; ipc: path
};

Parsed parse_endpoint(const std::string& ep) {
  Parsed p;
  if (ep.rfind("ipc://", 0) == 0) {
    p.ipc = true;
    p.path = ep.substr(6);
    return p;
  }
  SF_ENFORCE(ep.rfind("tcp://", 0) == 0 && ep.rfind(':') > 6, Error, "zmq lane: endpoint '{}' is not tcp:// or ipc://",
             ep);
  const size_t colon = ep.rfind(':');
  p.host = ep.substr(6, colon - 6);
  p.port = ep.substr(colon + 1);
  if (p.host.size() >= 2 && p.host.front() == '[' && p.host.back() == ']') p.host = p.host.substr(1, p.host.size() - 2);
  return p;
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  SF_ENFORCE(path.size() < sizeof a.sun_path, Error, "zmq lane: socket path '{}' is longer than {} bytes", path,
             sizeof a.sun_path - 1);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

using AddrInfo = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

AddrInfo resolve(const Parsed& p, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(p.host.c_str(), p.port.c_str(), &hints, &res);
  SF_ENFORCE(rc == 0 && res, Error, "zmq lane: cannot resolve '{}': {}", p.host, gai_strerror(rc));
  return AddrInfo(res, freeaddrinfo);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// The bytes that open a frame: the header's length, then the header.
std::vector<uint8_t> frame_head(const Header& h) {
  const std::vector<uint8_t> header = encode_header(h);
  std::vector<uint8_t> head(4 + header.size());
  put_u32(head.data(), static_cast<uint32_t>(header.size()));
  std::memcpy(head.data() + 4, header.data(), header.size());
  return head;
}

}  // namespace

std::array<uint8_t, kLaneGreetingBytes> lane_greeting(int rank, const LaneToken& token) {
  std::array<uint8_t, kLaneGreetingBytes> g{};
  put_u32(g.data(), kLaneMagic);
  put_u32(g.data() + 4, static_cast<uint32_t>(rank));
  std::memcpy(g.data() + 8, token.data(), token.size());
  return g;
}

int lane_greeting_rank(const uint8_t* g) {
  if (get_u32(g) != kLaneMagic) return -1;
  const uint32_t r = get_u32(g + 4);
  return r > (1u << 20) ? -1 : static_cast<int>(r);
}

bool lane_greeting_has(const uint8_t* g, const LaneToken& token) {
  return sodium_memcmp(g + 8, token.data(), token.size()) == 0;
}

int lane_listen(const std::string& zmq_endpoint, std::string& lane_endpoint) {
  const Parsed p = parse_endpoint(zmq_endpoint);
  int fd = -1;
  if (p.ipc) {
    const std::string path = p.path + ".lane";
    const sockaddr_un a = unix_address(path);
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    SF_ENFORCE(fd >= 0, Error, "zmq lane: socket() failed: {}", std::strerror(errno));
    ::unlink(path.c_str());
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0) {
      const int e = errno;
      ::close(fd);
      SF_THROW(Error, "zmq lane: cannot listen on {}: {}", path, std::strerror(e));
    }
    lane_endpoint = "ipc://" + path;
    return fd;
  }
  AddrInfo ai = resolve(Parsed{false, p.host, std::string(1, '0'), {}}, true);
  fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  SF_ENFORCE(fd >= 0, Error, "zmq lane: socket() failed: {}", std::strerror(errno));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 128) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
    const int e = errno;
    ::close(fd);
    SF_THROW(Error, "zmq lane: cannot listen on {}: {}", p.host, std::strerror(e));
  }
  const uint16_t port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                          : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  lane_endpoint = ai->ai_family == AF_INET6 ? fmt::format("tcp://[{}]:{}", p.host, port)
                                           : fmt::format("tcp://{}:{}", p.host, port);
  return fd;
}

int lane_connect(const std::string& lane_endpoint, int rank, const LaneToken& token, int socket_buffer_bytes) {
  const Parsed p = parse_endpoint(lane_endpoint);
  int fd = -1;
  int rc = -1;
  if (p.ipc) {
    const sockaddr_un a = unix_address(p.path);
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && socket_buffer_bytes > 0)
      ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &socket_buffer_bytes, sizeof socket_buffer_bytes);
    if (fd >= 0) rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  } else {
    AddrInfo ai = resolve(p, false);
    fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
      // The greeting and the connect are bounded: a peer that zmq reached answers at once.
      const timeval limit{10, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
      if (socket_buffer_bytes > 0)
        ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &socket_buffer_bytes, sizeof socket_buffer_bytes);
      rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
      const int one = 1;
      if (rc == 0) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
  }
  const auto g = lane_greeting(rank, token);
  if (rc == 0 && ::send(fd, g.data(), g.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(g.size())) {
    set_nonblocking(fd);
    return fd;
  }
  const int e = errno;
  if (fd >= 0) ::close(fd);
  SF_THROW(Error, "zmq lane: cannot connect to {}: {}", lane_endpoint, std::strerror(e));
}

std::string lane_peer_address(int fd, const sockaddr_storage& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) return inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&a)->sin_addr, buf, sizeof buf);
  if (a.ss_family == AF_INET6)
    return inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr, buf, sizeof buf);
  ucred cred{};
  socklen_t n = sizeof cred;
  if (a.ss_family == AF_UNIX && ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &n) == 0)
    return fmt::format("local process (uid:gid:pid {}:{}:{})", cred.uid, cred.gid, cred.pid);
  return "an unknown address";
}

std::string lane_peer_address(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "an unknown address";
  return lane_peer_address(fd, a);
}

void lane_unlink(const std::string& lane_endpoint) {
  if (lane_endpoint.rfind("ipc://", 0) == 0) ::unlink(lane_endpoint.c_str() + 6);
}

// ---- OutLane ----

OutLane::~OutLane() {
  std::lock_guard<std::mutex> lock(mu_);
  shut_locked();
  if (fd_.load() >= 0) ::close(fd_.load());
}

void OutLane::attach(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  fd_.store(fd);
}

bool OutLane::post(Tag tag, const Tensor& t, int from, const LaneCounters& c) {
  Header h;
  h.kind = Kind::kData;
  h.from = from;
  h.tag = tag;
  h.dtype = t.dtype();
  h.shape = t.shape();
  h.nbytes = t.nbytes();
  return enqueue(Frame{frame_head(h), t}, false, c);
}

bool OutLane::post_close(int from, const LaneCounters& c) {
  Header h;
  h.kind = Kind::kClose;
  h.from = from;
  return enqueue(Frame{frame_head(h), Tensor()}, true, c);
}

bool OutLane::enqueue(Frame f, bool closing, const LaneCounters& c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_ || closing_) {
    BufferPool::global().release(f.payload);  // dropped: give the sender's reference back
    return false;
  }
  closing_ = closing;
  const bool was_idle = queue_.empty();
  queue_.push_back(std::move(f));
  // Someone else's bytes are ahead: they are being written by the I/O thread, which will get
  // to these too. Otherwise write now, on the caller's thread.
  return was_idle && flush_locked(c);
}

bool OutLane::flush(const LaneCounters& c) {
  std::lock_guard<std::mutex> lock(mu_);
  return flush_locked(c);
}

bool OutLane::flush_locked(const LaneCounters& c) {
  const int fd = fd_.load();
  while (!queue_.empty() && fd >= 0 && !shut_) {
    iovec iov[kMaxIov];
    size_t n_iov = 0;
    size_t skip = written_;
    for (auto it = queue_.begin(); it != queue_.end() && n_iov + 2 <= kMaxIov; ++it) {
      const size_t hb = it->head.size(), pb = it->payload.defined() ? it->payload.nbytes() : 0;
      if (skip < hb) iov[n_iov++] = {it->head.data() + skip, hb - skip};
      if (pb > 0 && skip < hb + pb) {
        const size_t off = skip > hb ? skip - hb : 0;
        iov[n_iov++] = {static_cast<uint8_t*>(it->payload.raw()) + off, pb - off};
      }
      skip = 0;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n_iov;
    const ssize_t n = ::sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (c.deferred) c.deferred();
        backlog_.store(true);
        return true;
      }
      shut_locked();  // the peer is gone; its lane's reader or the heartbeat says so
      return false;
    }
    size_t left = static_cast<size_t>(n);
    while (left > 0) {  // every frame has a non-empty head, so a written frame has taken bytes
      Frame& f = queue_.front();
      const size_t total = f.head.size() + (f.payload.defined() ? f.payload.nbytes() : 0);
      if (written_ + left < total) {
        written_ += left;
        left = 0;
        break;
      }
      left -= total - written_;
      written_ = 0;
      if (f.payload.defined()) {
        if (c.sent) c.sent(f.payload.nbytes());
        BufferPool::global().release(f.payload);
      }
      queue_.pop_front();
    }
  }
  backlog_.store(!queue_.empty() && !shut_);
  return backlog_.load();
}

void OutLane::shut() {
  std::lock_guard<std::mutex> lock(mu_);
  shut_locked();
}

void OutLane::shut_locked() {
  shut_ = true;
  for (Frame& f : queue_) BufferPool::global().release(f.payload);
  queue_.clear();
  written_ = 0;
  backlog_.store(false);
}

// ---- InLane ----

InLane::~InLane() { shut(); }

bool InLane::attach(int fd, int socket_buffer_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_.load() >= 0 || done_.load()) return false;
  // Blocking, so that a caller holding the lane can sleep in recv(MSG_WAITALL) for at most
  // kHeldSliceMs; the I/O thread reads with MSG_DONTWAIT.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const timeval slice{0, kHeldSliceMs * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof slice);
  if (socket_buffer_bytes > 0)
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &socket_buffer_bytes, sizeof socket_buffer_bytes);
  fd_.store(fd);
  return true;
}

int InLane::pollable_fd(int64_t now_us, int64_t& recheck_us) const {
  if (done_.load() || held_.load()) return -1;
  const int64_t free_at = released_us_.load() + kReleaseGraceUs;
  if (now_us < free_at) {
    recheck_us = free_at;
    return -1;
  }
  return fd_.load();
}

void InLane::shut() {
  const int fd = fd_.load();
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);  // a caller asleep in recv() returns now
  std::lock_guard<std::mutex> lock(mu_);
  finish();
  if (fd_.load() >= 0) ::close(fd_.exchange(-1));
}

void InLane::finish() {
  done_.store(true);
  BufferPool::global().release(payload_);
  payload_ = Tensor();
}

bool InLane::read(size_t budget, const Events& ev) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  if (!done_.load() && fd_.load() >= 0) read_locked(budget, ev, false);
  return true;
}

bool InLane::hold() {
  if (done_.load() || fd_.load() < 0 || !mu_.try_lock()) return false;
  if (done_.load() || fd_.load() < 0) {
    mu_.unlock();
    return false;
  }
  held_.store(true);
  return true;
}

void InLane::read_held(size_t budget, const Events& ev) {
  if (!done_.load()) read_locked(budget, ev, true);
}

void InLane::release() {
  released_us_.store(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
  held_.store(false);
  mu_.unlock();
}

size_t InLane::stage_bytes() const {
  switch (stage_) {
    case Stage::kLength: return 4;
    case Stage::kHeader: return header_.size();
    case Stage::kPayload: return payload_.nbytes();
  }
  return 0;
}

uint8_t* InLane::stage_buffer() {
  switch (stage_) {
    case Stage::kLength: return length_;
    case Stage::kHeader: return header_.data();
    case Stage::kPayload: return static_cast<uint8_t*>(payload_.raw());
  }
  return nullptr;
}

void InLane::read_locked(size_t budget, const Events& ev, bool wait) {
  const int fd = fd_.load();
  // A waiting reader sleeps in the kernel until the whole stage is there (or the socket's
  // receive timeout, kHeldSliceMs, passes): one recv() per stage instead of a poll() and a
  // recv() for every few segments.
  const int flags = wait ? MSG_WAITALL : MSG_DONTWAIT;
  // Past the budget only a stage already complete goes on (an empty payload is delivered).
  while (!done_.load() && (budget > 0 || got_ >= stage_bytes())) {
    const size_t need = stage_bytes();
    if (got_ < need) {
      const size_t want = std::min(need - got_, stage_ == Stage::kPayload ? budget : need);
      const ssize_t n = ::recv(fd, stage_buffer() + got_, want, flags);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {
        const std::string why = n == 0 ? "lost its connection without a close notice (killed, or its host went away)"
                                       : fmt::format("lost its connection: {}", std::strerror(errno));
        finish();
        ev.lost(why);
        return;
      }
      got_ += static_cast<size_t>(n);
      budget -= std::min(budget, static_cast<size_t>(n));
      if (got_ < need) continue;
    }
    // The stage is complete.
    got_ = 0;
    if (stage_ == Stage::kLength) {
      const uint32_t len = get_u32(length_);
      if (len == 0 || len > kMaxLaneHeaderBytes) {
        finish();
        ev.malformed(MalformedFrame(Defect::kHeader, fmt::format("a lane frame header of {} bytes", len)));
        return;
      }
      header_.assign(len, 0);
      stage_ = Stage::kHeader;
    } else if (stage_ == Stage::kHeader) {
      try {
        h_ = decode_header(header_.data(), header_.size(), limits_);
        if (h_.from != peer_)
          throw MalformedFrame(Defect::kSender, fmt::format("a frame from rank {} on rank {}'s lane", h_.from, peer_));
        if (h_.kind != Kind::kData && h_.kind != Kind::kClose)
          throw MalformedFrame(Defect::kHeader, fmt::format("a {} frame on a data lane", kind_name(h_.kind)));
      } catch (const MalformedFrame& e) {
        finish();
        ev.malformed(e);
        return;
      }
      if (h_.kind == Kind::kClose) {
        finish();
        ev.closed();
        return;
      }
      payload_ = BufferPool::global().acquire(h_.dtype, static_cast<int64_t>(h_.nbytes / dtype_size(h_.dtype)))
                     .view(h_.shape);
      stage_ = Stage::kPayload;
    } else {
      stage_ = Stage::kLength;
      Tensor t = std::move(payload_);
      payload_ = Tensor();
      ev.message(h_.tag, std::move(t));
      if (wait) return;  // the caller looks whether it was the one it waits for
    }
  }
}

}  // namespace sf::comm::zmq
