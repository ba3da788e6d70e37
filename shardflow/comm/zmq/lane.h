// Lane: the data path of the zmq backend — one plain stream socket (TCP, or a unix-domain
// socket beside an ipc:// endpoint) per ordered pair of ranks, carrying tensors and the close
// notice. libzmq keeps the control plane (rendezvous, the job-secret handshake, heartbeats and
// the lane offer); bulk bytes skip it, because per message libzmq costs two more thread
// hand-offs and a fresh malloc'd receive buffer whose pages fault on first touch
// (docs/zmq_transport.md, "Why a lane").
//
// Setting up (comm/zmq/engine.h): every rank listens on a lane endpoint next to its zmq one.
// When rank b's ROUTER has seen rank a prove the job secret, b offers a its lane endpoint and a
// fresh random token over that authenticated connection; a connects and opens the stream with
// a greeting (magic, its rank, the token). b accepts the stream as a's only if the token is the
// one it offered a; anything else is refused, logged with its address and counted. So a lane
// carries data only from a peer that proved the job secret.
//
// Wire format of a lane, after the greeting (little-endian):
//
//   frame   = u32 header length, msgpack header (comm/zmq/header.h: kind data or close),
//             then for data exactly nbytes of payload
//
// Sending (OutLane): the caller's own thread writes to the socket (sendmsg, non-blocking, the
// header and the tensor's bytes in one gather): no hand-off. Whatever the socket cannot take
// at once stays queued by reference and the I/O thread writes it when the socket drains, so
// send() never blocks. A tensor's pooled reference is handed back once its bytes are written.
//
// Receiving (InLane): the thread that waits for the peer's message reads the socket itself,
// or the I/O thread when nobody waits; each payload goes straight into a pooled buffer of its
// size (comm/buffer_pool.h): no copy after the kernel's and no fresh pages.
//
// Threading: OutLane and InLane are thread-safe (one mutex per lane, held while writing or
// reading). The free functions are used by the I/O thread.
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <shardflow/comm/zmq/handshake.h>
#include <shardflow/comm/zmq/header.h>
#include <shardflow/core/tensor.h>

namespace sf::comm::zmq {

// The greeting that opens a lane: magic, the connecting rank, the token it was offered.
inline constexpr uint32_t kLaneMagic = 0x324c4653;  // "SFL2"
inline constexpr size_t kLaneGreetingBytes = 8 + kNonceBytes;
// The longest a caller holding a lane sleeps in one recv(): how soon it sees a close() of its
// own endpoint or its deadline.
inline constexpr int kHeldSliceMs = 50;
// How long after a receiver lets go of a lane the I/O thread leaves it alone (InLane).
inline constexpr int64_t kReleaseGraceUs = 1000;
// Bytes read from one lane per turn before the reader looks at anything else.
inline constexpr size_t kLaneReadBudget = size_t{4} << 20;
// A frame header longer than this is refused (a data header with 16 dims is ~250 bytes).
inline constexpr uint32_t kMaxLaneHeaderBytes = 4096;

// A token is a fresh random nonce (fresh_nonce(), comm/zmq/handshake.h).
using LaneToken = Nonce;
std::array<uint8_t, kLaneGreetingBytes> lane_greeting(int rank, const LaneToken& token);
// The rank a greeting names, or -1 if its magic is wrong.
int lane_greeting_rank(const uint8_t* greeting);
// True if the greeting carries `token` (constant time).
bool lane_greeting_has(const uint8_t* greeting, const LaneToken& token);

// Binds a listening socket for lanes beside zmq endpoint `zmq_endpoint` (tcp://host:port: the
// same host, an ephemeral port; ipc://path: a unix socket at path + ".lane"). Returns the fd
// (non-blocking) and sets `lane_endpoint`. Throws Error if it cannot.
int lane_listen(const std::string& zmq_endpoint, std::string& lane_endpoint);
// Connects to a lane endpoint and sends the greeting; returns the connected fd (non-blocking,
// TCP_NODELAY, SO_SNDBUF = socket_buffer_bytes unless 0). Throws Error naming the endpoint if it
// cannot.
int lane_connect(const std::string& lane_endpoint, int rank, const LaneToken& token, int socket_buffer_bytes);
// The peer address of a connected stream ("127.0.0.1", "local process (uid:gid:pid 0:0:42)").
std::string lane_peer_address(int fd);
// The same from the address accept() gave: it names a peer that has already gone (reset its
// connection) by the time we ask, which getpeername() cannot.
std::string lane_peer_address(int fd, const sockaddr_storage& accepted);
// Removes the socket file of an ipc lane endpoint (no-op for tcp).
void lane_unlink(const std::string& lane_endpoint);

// Counters an OutLane adds to as bytes leave (the endpoint's ZmqStats).
struct LaneCounters {
  std::function<void(uint64_t bytes)> sent;  // one tensor fully written
  std::function<void()> deferred;            // a write left bytes for the I/O thread
};

class OutLane {
 public:
  OutLane() = default;
  ~OutLane();
  OutLane(const OutLane&) = delete;
  OutLane& operator=(const OutLane&) = delete;

  // Installs the connected socket (set once, by the I/O thread).
  void attach(int fd);
  // Queues a data frame for t (by reference) and writes what the socket takes now. Returns
  // true if bytes are left for the I/O thread. Drops (and releases) t if the lane is shut.
  bool post(Tag tag, const Tensor& t, int from, const LaneCounters& c);
  // Queues the close notice after everything posted before; later posts are dropped.
  bool post_close(int from, const LaneCounters& c);
  // Writes what the socket takes now (the I/O thread, when the socket is writable). Returns
  // true if bytes are still left. A write error shuts the lane.
  bool flush(const LaneCounters& c);
  // Drops what is queued and what is posted later (the peer is gone); the socket closes
  // with the lane.
  void shut();

  // Lock-free, for the I/O thread's poll set (a sender may hold the lock in sendmsg).
  int fd() const { return fd_.load(); }
  bool idle() const { return !backlog_.load(); }  // nothing queued (or shut)

 private:
  struct Frame {
    std::vector<uint8_t> head;  // length prefix + msgpack header
    Tensor payload;             // undefined for a close notice
  };
  // Queues f (unless the lane is shut or closing) and writes now if nothing was ahead of it.
  bool enqueue(Frame f, bool closing, const LaneCounters& c);
  bool flush_locked(const LaneCounters& c);
  void shut_locked();

  mutable std::mutex mu_;
  std::atomic<int> fd_{-1};
  std::atomic<bool> backlog_{false};  // queue_ is not empty; written under mu_
  bool shut_ = false, closing_ = false;
  std::deque<Frame> queue_;
  size_t written_ = 0;  // bytes of queue_.front() already written
};

// The receiving end of one lane. Whoever holds it reads: a thread waiting in
// Fabric::take() for a message from this peer reads the socket itself (no hand-off on the
// way in), and the I/O thread reads whenever no caller does, so the lane drains while nobody
// waits on it.
class InLane {
 public:
  struct Events {
    std::function<void(Tag, Tensor)> message;
    std::function<void()> closed;                   // the peer's close notice
    std::function<void(const std::string&)> lost;   // EOF or error before a close notice
    std::function<void(const MalformedFrame&)> malformed;
  };
  InLane(int peer, HeaderLimits limits) : peer_(peer), limits_(limits) {}
  ~InLane();
  InLane(const InLane&) = delete;
  InLane& operator=(const InLane&) = delete;

  // Installs the greeted socket (SO_RCVBUF = socket_buffer_bytes unless 0); false if the lane
  // has one already (or is shut).
  bool attach(int fd, int socket_buffer_bytes);
  // The socket while the lane is open, nobody holds it and its last holder let go at least
  // kReleaseGraceUs ago, for the I/O thread's poll(); -1 otherwise. A receiver that comes back
  // for the next message within the grace reads it whole itself rather than finding the I/O
  // thread halfway through it. `recheck_us` is set to when it becomes pollable, if it will.
  int pollable_fd(int64_t now_us, int64_t& recheck_us) const;

  // Reads what is there, at most `budget` bytes (so other sockets get their turn), and reports
  // each complete frame, unless another thread holds the lane. After closed, lost or malformed
  // the lane is done. Returns false if it was held elsewhere.
  bool read(size_t budget, const Events& ev);
  // Takes the lane for a caller (false if it is held, done or not attached yet); then
  // read_held() until the caller has what it waits for, then release().
  bool hold();
  // Like read(), but sleeps until bytes come, at most kHeldSliceMs at a time.
  void read_held(size_t budget, const Events& ev);
  void release();
  bool done() const { return done_.load(); }
  // Ends the lane: wakes a caller blocked on it, drops a partial frame, closes the socket.
  void shut();

 private:
  enum class Stage : uint8_t { kLength, kHeader, kPayload };
  size_t stage_bytes() const;
  uint8_t* stage_buffer();
  void read_locked(size_t budget, const Events& ev, bool wait);
  void finish();

  const int peer_;
  const HeaderLimits limits_;
  mutable std::mutex mu_;  // held by the reader
  std::atomic<int> fd_{-1};
  std::atomic<bool> done_{false}, held_{false};
  std::atomic<int64_t> released_us_{0};  // steady clock, when the last holder let go
  Stage stage_ = Stage::kLength;
  uint8_t length_[4] = {};
  std::vector<uint8_t> header_;
  size_t got_ = 0;  // bytes of the current stage read
  Header h_;
  Tensor payload_;
};

}  // namespace sf::comm::zmq
