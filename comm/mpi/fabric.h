// Fabric: this process's attachment to MPI behind the mpi backend. It owns MPI_Init_thread /
// MPI_Finalize (or attaches to an MPI that someone else initialised, and then leaves it
// initialised) and ONE communication thread that makes every MPI call of the backend.
//
// The thread works a queue of outgoing messages and polls MPI: each message is a header (tag,
// dtype, shape: comm/mpi/header.h) on MPI tag kHeaderTag, then the raw payload on kPayloadTag
// in pieces of at most kMaxPieceBytes (none for an empty tensor), both non-blocking
// (MPI_Isend / MPI_Irecv / MPI_Iprobe / MPI_Test) over a duplicate of MPI_COMM_WORLD. MPI's
// non-overtaking order keeps a sender's headers and payloads paired. Arrived tensors go into
// one inbox per source rank with one FIFO queue per 64-bit transport tag, where recv() takes
// them, exactly as in the inproc fabric.
//
// Buffers: a sent tensor is held until its bytes have left, then the sender's pooled
// reference is released (BufferPool::release); a received payload lands in a fresh pooled
// buffer, which the receiver releases (comm/transport.h).
//
// Close: close() sends a kClose notice to every peer; a peer's receives from this rank then
// fail once the messages sent before it are taken. Destroying the fabric closes it, keeps
// draining incoming messages until every peer has closed too (at most kLinger), then frees
// the communicator and, if it initialised MPI, calls MPI_Finalize (which MPI allows once per
// process, so make_mpi_world() refuses to start a second fabric after that).
//
// Native collectives: start_native() queues an operation for the same thread, which runs it
// as one of MPI's non-blocking collectives on a communicator per group (comm/mpi/collectives.h)
// and keeps polling without sleeping while one is in flight — without yielding either, unless
// the host has more ranks than cores (as Open MPI's own progress loop does).
//
// Threading: every public member may be called from any thread; only the fabric's own thread
// touches MPI. If MPI was initialised elsewhere it must provide at least
// MPI_THREAD_SERIALIZED, and the program must not call MPI concurrently with the fabric
// unless it provides MPI_THREAD_MULTIPLE.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "comm/detail/inbox.h"
#include "comm/mpi/native_op.h"
#include "comm/transport.h"
#include "core/tensor.h"

namespace sf::comm::mpi {

inline constexpr int kHeaderTag = 1;
inline constexpr int kPayloadTag = 2;
inline constexpr size_t kMaxPieceBytes = size_t{1} << 30;
inline constexpr std::chrono::seconds kLinger{60};

class Fabric {
 public:
  // Starts the thread, which initialises MPI (or attaches) and reads rank and size; throws
  // Error if MPI cannot be used (too low a thread level, already finalised).
  Fabric();
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Queues t for dst; dropped (and released) if dst or this endpoint has closed.
  void post(int dst, Tag tag, const Tensor& t);
  // Pops the oldest (src, tag) message; PeerLost on timeout, once src has closed and its
  // queue is empty, or when this endpoint has closed.
  Tensor take(int src, Tag tag, std::chrono::milliseconds timeout);
  // Closes this endpoint (idempotent).
  void close();
  bool closed() const { return closed_.load(); }
  // 0 while `src` is open; once its close notice (or a malformed header) has arrived, the
  // position of that closure among all peers' (1 for the first), so a waiter can blame the
  // peer that went first.
  uint64_t peer_closed(int src) const;

  // Queues a native collective for the MPI thread (comm/mpi/collectives.h).
  void start_native(std::shared_ptr<NativeOp> op);
  // MPI_TAG_UB, which bounds the native collectives' communicator creation tags.
  int tag_ub() const { return tag_ub_; }

 private:
  struct Outgoing;
  struct Incoming;
  class Engine;  // the thread's state: MPI handles and in-flight requests (fabric.cc)

  void run();  // the communication thread
  void deliver(int src, Tag tag, Tensor t);
  void mark_src_closed(int src, std::string why);

  int rank_ = -1;
  int size_ = 0;
  int tag_ub_ = 0;
  std::atomic<bool> closed_{false};  // this endpoint: set by close(), read by post/take
  uint64_t closures_ = 0;             // peers' closures seen so far (MPI thread only)
  std::vector<std::unique_ptr<detail::Inbox>> inboxes_;

  // Requests for the thread, guarded by mu_.
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Outgoing>> outbox_;
  std::deque<std::shared_ptr<NativeOp>> native_box_;
  bool close_requested_ = false;
  bool shutdown_ = false;
  bool started_ = false;     // the thread has set rank_/size_ or start_error_
  std::string start_error_;  // why MPI could not be used

  std::thread thread_;
};

}  // namespace sf::comm::mpi
