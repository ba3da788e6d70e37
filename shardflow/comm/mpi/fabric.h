// Fabric: this process's attachment to MPI behind the mpi backend. It owns MPI_Init_thread /
// MPI_Finalize (or attaches to an MPI that someone else initialised, and then leaves it
// initialised) and one communication thread that keeps MPI moving when no caller does.
//
// Who calls MPI: whoever holds the MPI lock (mpi_mu_; MPI_THREAD_SERIALIZED). The fabric's
// thread takes it (try_lock) for one step of work at a time: start queued sends, probe for
// headers, test point-to-point requests, progress native collectives (Engine::step). A caller
// reaches MPI itself: a native collective is started on the caller's thread and its waiter
// polls it by running the same step (NativeWaiter), and post() starts its send at once when
// the lock is free — so a small collective costs no thread hand-off and no wake-up. While a
// caller drives, the thread does not spin; it is what makes progress for requests nobody
// waits on (async operations not yet waited, given-up collectives, incoming messages).
//
// Messages: each is a header (tag, dtype, shape: comm/mpi/header.h) on MPI tag kHeaderTag,
// then the raw payload on kPayloadTag in pieces of at most kMaxPieceBytes (none for an empty
// tensor), both non-blocking
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
// Receives: take() polls for a while (kReceivePoll) before it sleeps, so a message that is
// already on its way is probed, received and delivered on the receiver's own thread.
//
// Native collectives: start_native() starts an operation on the caller's thread as one of
// MPI's non-blocking collectives on a communicator per group (comm/mpi/collectives.h). With
// nobody driving, the fabric's thread polls without sleeping while one is in flight — without
// yielding either, unless the host has more ranks than cores (as Open MPI's own progress loop
// does).
//
// Threading: every public member may be called from any thread; MPI is called only under the
// MPI lock, so MPI must provide MPI_THREAD_SERIALIZED (the fabric asks for it; Open MPI
// gives it). If MPI was initialised elsewhere, the program must not call MPI concurrently with
// the fabric unless it provides MPI_THREAD_MULTIPLE. MPI_Init_thread and MPI_Finalize run on
// the fabric's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <shardflow/comm/detail/inbox.h>
#include <shardflow/comm/mpi/native_op.h>
#include <shardflow/comm/transport.h>
#include <shardflow/core/tensor.h>

namespace sf::comm::mpi {

inline constexpr int kHeaderTag = 1;
inline constexpr int kPayloadTag = 2;
inline constexpr size_t kMaxPieceBytes = size_t{1} << 30;
inline constexpr std::chrono::seconds kLinger{60};
// How long a receive makes progress itself before it sleeps until the fabric's thread
// delivers, and how long any poller spins before it yields between polls.
inline constexpr std::chrono::microseconds kReceivePoll{1000};
inline constexpr std::chrono::microseconds kSpin{200};
// A waiter on a collective tests only in-flight collectives, except every this many polls
// (incoming messages, the sequencer's communicator grants): each MPI_Iprobe runs a round of
// Open MPI's progress engine too.
inline constexpr unsigned kFullStepEvery = 16;

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
  // close(), then stops the engine thread, which frees the communicator and finalizes MPI if
  // it initialised it. Idempotent; the destructor calls it.
  void finish();
  bool closed() const { return closed_.load(); }
  // 0 while `src` is open; once its close notice (or a malformed header) has arrived, the
  // position of that closure among all peers' (1 for the first), so a waiter can blame the
  // peer that went first.
  uint64_t peer_closed(int src) const;

  // Starts a native collective (comm/mpi/collectives.h) on this thread: collectives are
  // matched in the order each thread starts them. Nothing happens once the fabric has shut
  // down (the waiter then sees closed()).
  void start_native(std::shared_ptr<NativeOp> op);
  // What a poll does: all of a step's MPI work, or only test the in-flight collectives.
  enum class Scope { kAll, kCollectives };
  // Makes the fabric's progress on this thread until done() or `until`: per poll, `scope`'s
  // MPI work (a whole step every kFullStepEvery polls) whenever no other thread is in MPI
  // (then that one makes the progress), without giving the core away until `spin_until`
  // (unless the host has more ranks than cores), yielding it between polls after that.
  // Meanwhile the fabric's thread sleeps. Returns done().
  bool drive(const std::function<bool()>& done, Scope scope, std::chrono::steady_clock::time_point until,
             std::chrono::steady_clock::time_point spin_until);
  // MPI_TAG_UB, which bounds the native collectives' communicator creation tags.
  int tag_ub() const { return tag_ub_; }

 private:
  struct Outgoing;
  struct Incoming;
  class Engine;  // the thread's state: MPI handles and in-flight requests (fabric.cc)

  void run();  // the communication thread
  bool progress(Scope scope);  // one poll, if the MPI lock is free
  void deliver(int src, Tag tag, Tensor t);
  void mark_src_closed(int src, std::string why);

  int rank_ = -1;
  int size_ = 0;
  int tag_ub_ = 0;
  bool crowded_ = false;
  std::atomic<bool> closed_{false};  // this endpoint: set by close(), read by post/take
  uint64_t closures_ = 0;             // peers' closures seen so far (under mpi_mu_)
  std::vector<std::unique_ptr<detail::Inbox>> inboxes_;

  // The MPI lock: held by whichever thread calls MPI. engine_ is the thread's MPI state, set
  // once MPI is up and cleared (under the lock) just before MPI_Finalize.
  std::mutex mpi_mu_;
  Engine* engine_ = nullptr;
  std::atomic<int> drivers_{0};

  // Requests for the thread, guarded by mu_ (taken after mpi_mu_ where both are held).
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Outgoing>> outbox_;
  bool close_requested_ = false;
  bool close_taken_ = false;     // a step has taken the close request (sends the notices)
  bool shutdown_ = false;
  bool shutdown_taken_ = false;  // a step has seen shutdown_ (the linger has begun)
  bool started_ = false;     // the thread has set rank_/size_ or start_error_
  std::string start_error_;  // why MPI could not be used

  std::thread thread_;
};

}  // namespace sf::comm::mpi
