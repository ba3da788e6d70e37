// Fabric: one rank's endpoint of the zmq backend — its libzmq context, its sockets, and ONE
// I/O thread that owns them all (libzmq sockets are not thread-safe).
//
// Sockets: a ROUTER bound on this rank's data endpoint receives from every peer; one DEALER
// per peer, connected to that peer's ROUTER, sends to it. Data flows DEALER -> ROUTER; the
// answers that belong to a connection (handshake challenge, credit grants) flow back on the
// same connection. Every connection first proves the job secret (comm/zmq/handshake.h); the
// ROUTER accepts nothing else from a connection until it has, and logs and counts what it
// refuses. Each message is a msgpack header frame and, for a tensor, one raw payload frame
// sent zero-copy from the tensor's own storage (comm/zmq/header.h, docs/zmq_transport.md).
//
// Threads: send() and recv() never touch a socket. post() queues the tensor (by reference)
// in the outbox and wakes the I/O thread through an eventfd; the thread sends it once the
// link is up and has credit (comm/zmq/credit.h). The thread copies each arrived payload into
// a fresh pooled buffer and puts it in an inbox per source rank with one FIFO queue per tag,
// where take() waits on a condition variable, exactly as the inproc and mpi fabrics do.
// Nothing a peer sends can throw out of the I/O thread: malformed frames are dropped and
// counted (ZmqStats).
//
// Failure: a peer is lost when its DEALER connection drops (a killed process's sockets close
// at once; a frozen one stops answering ZMTP heartbeats and is cut off after
// ZmqOptions::heartbeat_timeout) and no close notice follows within kLossGrace; its inbox is
// then closed, so receives from it fail with PeerLost naming it once what it sent before is
// taken. A peer that closes its endpoint sends a close notice after its last message.
//
// Buffers (comm/transport.h): a sent tensor's pooled reference is released by libzmq's free
// callback once the payload has left; received tensors are fresh pooled buffers.
//
// Threading: every public member may be called from any thread, except that start() is
// called once, before any post() or take().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/detail/tag_queues.h"
#include "comm/transport.h"
#include "comm/zmq/handshake.h"
#include "comm/zmq/options.h"
#include "comm/zmq/socket.h"
#include "comm/zmq/stats.h"
#include "core/tensor.h"

namespace sf::comm::zmq {

// How long a dropped connection waits for the peer's close notice before the peer is lost:
// the notice travels on the other connection of the pair and may be read a little later.
inline constexpr std::chrono::milliseconds kLossGrace{200};

class Fabric {
 public:
  // Binds this rank's ROUTER on `bind_to` ("tcp://host:*" or "ipc://path"); throws Error if
  // it cannot.
  Fabric(int rank, int size, const std::string& bind_to, const ZmqOptions& opts);
  // Closes the endpoint, sends what is queued (at most opts.linger) and joins the thread.
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The endpoint peers connect to, port or path resolved.
  const std::string& endpoint() const { return endpoint_; }
  // The libzmq context, for the rendezvous's own sockets before start().
  Context& context() { return ctx_; }

  // Connects to every peer (endpoints[r] is rank r's) and starts the I/O thread.
  void start(std::vector<std::string> endpoints);
  // Waits until every link is up both ways (or `deadline`); returns the ranks whose links
  // are not, lost ones included.
  std::vector<int> wait_linked(std::chrono::steady_clock::time_point deadline);

  // Queues t for dst; dropped (and released) if dst or this endpoint has closed or is lost.
  void post(int dst, Tag tag, const Tensor& t);
  // Pops the oldest (src, tag) message; PeerLost on timeout, once src has closed or been
  // lost and its queue is empty, or when this endpoint has closed.
  Tensor take(int src, Tag tag, std::chrono::milliseconds timeout);
  // Closes this endpoint (idempotent): peers get a close notice after the messages queued
  // before it.
  void close();
  ZmqStats stats() const;

 private:
  struct Inbox {
    std::mutex mu;
    std::condition_variable cv;
    detail::TagQueues queues;
    bool src_closed = false;
    std::string closed_why;
  };
  struct Outgoing {
    int dst;
    Tag tag;
    Tensor t;
  };
  struct Counters;
  class Engine;  // the I/O thread and all it owns (comm/zmq/engine.h)

  void run(std::vector<std::string> endpoints);
  void deliver(int src, Tag tag, Tensor t);
  void mark_src_closed(int src, std::string why);
  void set_linked(int peer, bool out);

  const int rank_, size_;
  const ZmqOptions opts_;
  const JobKey key_;
  Context ctx_;
  Socket router_;  // bound here, used by the I/O thread once started
  std::string endpoint_;
  std::unique_ptr<Counters> counters_;

  std::atomic<bool> closed_{false};
  std::vector<std::unique_ptr<Inbox>> inboxes_;

  // Requests for the I/O thread, guarded by mu_; wake_fd_ is its eventfd.
  std::mutex mu_;
  std::deque<Outgoing> outbox_;
  bool close_requested_ = false;
  bool shutdown_ = false;
  int wake_fd_ = -1;

  // Link state for wait_linked(), guarded by link_mu_.
  std::mutex link_mu_;
  std::condition_variable link_cv_;
  std::vector<char> out_up_, in_up_, gone_;

  std::thread thread_;
};

}  // namespace sf::comm::zmq
