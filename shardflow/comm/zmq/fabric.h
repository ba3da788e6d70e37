// Fabric: one rank's endpoint of the zmq backend — its libzmq context and sockets (the control
// plane), its data lanes (comm/zmq/lane.h), and ONE I/O thread that owns the sockets (libzmq
// sockets are not thread-safe) and reads the lanes.
//
// Control plane: a ROUTER bound on this rank's endpoint hears from every peer; one DEALER per
// peer, connected to that peer's ROUTER, speaks to it. Every connection first proves the job
// secret (comm/zmq/handshake.h); the ROUTER accepts nothing else from a connection until it
// has, and logs and counts what it refuses. Once a peer has proven itself, the ROUTER offers
// it a data lane (endpoint and token); ZMTP heartbeats on the DEALERs notice frozen peers.
//
// Data: post() writes the tensor to the peer's lane on the caller's own thread (no hand-off);
// what the socket cannot take at once waits, by reference, for the I/O thread. take() reads
// the source's lane itself when no other thread does (no hand-off either), and otherwise waits
// on the source's inbox (comm/detail/inbox.h), one FIFO queue per tag, which every reader of
// the lane fills — the I/O thread too, for lanes nobody waits on. Payloads land straight in
// pooled buffers. Nothing a peer sends can throw out of a reader: a malformed frame ends its
// lane, and is counted (ZmqStats) and logged.
//
// Failure: a peer is lost when its lane ends without a close notice (a killed process's
// sockets close at once), when its DEALER connection drops and no close notice follows within
// kLossGrace, or when it stops answering heartbeats (frozen) for
// ZmqOptions::heartbeat_timeout. Its inbox is then closed, so receives from it fail with
// PeerLost naming it once what it sent before is taken. A peer that closes its endpoint sends
// a close notice on its lanes after its last message.
//
// Buffers (comm/transport.h): a sent tensor's pooled reference is released once its bytes are
// written; received tensors are fresh pooled buffers.
//
// Threading: every public member may be called from any thread, except that start() is
// called once, before any post() or take().
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/comm/detail/inbox.h>
#include <shardflow/comm/transport.h>
#include <shardflow/comm/zmq/handshake.h>
#include <shardflow/comm/zmq/lane.h>
#include <shardflow/comm/zmq/options.h>
#include <shardflow/comm/zmq/socket.h>
#include <shardflow/comm/zmq/stats.h>
#include <shardflow/core/tensor.h>

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
  // Where peers open their data lanes to this rank (comm/zmq/lane.h).
  const std::string& lane_endpoint() const { return lane_endpoint_; }
  // The libzmq context, for the rendezvous's own sockets before start().
  Context& context() { return ctx_; }

  // Connects to every peer (endpoints[r] is rank r's) and starts the I/O thread.
  void start(std::vector<std::string> endpoints);
  // Waits until every link is up both ways (or `deadline`); returns the ranks whose links
  // are not, lost ones included.
  std::vector<int> wait_linked(std::chrono::steady_clock::time_point deadline);

  // Sends t to dst on its lane, writing what the socket takes now; never blocks. Dropped (and
  // released) if dst or this endpoint has closed or is lost.
  void post(int dst, Tag tag, const Tensor& t);
  // Pops the oldest (src, tag) message; PeerLost on timeout, once src has closed or been
  // lost and its queue is empty, or when this endpoint has closed.
  Tensor take(int src, Tag tag, std::chrono::milliseconds timeout);
  // take() that returns nothing when `wait` passes first (the I/O thread reads the lane
  // meanwhile); still PeerLost once src has closed or been lost, or after an interrupt().
  std::optional<Tensor> poll(int src, Tag tag, std::chrono::milliseconds wait);
  // Closes this endpoint (idempotent): peers get a close notice after the messages queued
  // before it.
  void close();
  ZmqStats stats() const;
  // The peers lost so far (killed, frozen past the heartbeat, unreachable), in rank order; a
  // peer that closed its endpoint is not lost.
  std::vector<int> lost_peers() const;
  // The peers that closed their endpoints (a close notice), in rank order.
  std::vector<int> closed_peers() const;
  // From now on every take() whose tag is not a membership tag (comm/transport.h) fails with
  // PeerLost naming `lost` and `why` — those waiting now within one wait slice (5 ms, or 50 ms
  // for a receive reading its lane itself). Idempotent (the first call's rank and reason stay).
  void interrupt(int lost, const std::string& why);
  // Undoes interrupt(): take() goes on, and a later interrupt() counts again.
  void clear_interrupt();

 private:
  struct Counters;
  class Engine;  // the I/O thread and all it owns (comm/zmq/engine.h)
  // A lane that ended (close notice, EOF, a malformed frame): the link is dropped by the I/O
  // thread, which owns the sockets.
  struct LaneEnd {
    int peer;
    bool lost;
    std::string why;
  };

  void run(std::vector<std::string> endpoints);
  void deliver(int src, Tag tag, Tensor t);
  void mark_src_closed(int src, bool lost, std::string why);
  // Throws the PeerLost of interrupt() unless `tag` is a membership tag or none was asked.
  void throw_if_interrupted(int src, Tag tag) const;
  bool interrupted(Tag tag) const { return interrupted_.load() && !is_membership_tag(tag); }
  void set_linked(int peer, bool out);
  void wake();
  // What reading peer p's lane does with each frame; a lane's end is left in `end`.
  InLane::Events lane_events(int p, std::optional<LaneEnd>& end);
  // take(), as the reader of src's lane: reads until the inbox has `tag`, the lane ends or the
  // deadline passes. False if another thread reads the lane.
  bool read_lane_until(int src, Tag tag, std::chrono::steady_clock::time_point deadline);

  const int rank_, size_;
  const ZmqOptions opts_;
  const JobKey key_;
  Context ctx_;
  Socket router_;  // bound here, used by the I/O thread once started
  std::string endpoint_;
  std::unique_ptr<Counters> counters_;
  LaneCounters lane_counters_;

  // Data lanes: the listening socket (read by the I/O thread), the token offered to each
  // peer, and the outgoing lane to each peer (null for this rank).
  int lane_fd_ = -1;
  std::string lane_endpoint_;
  std::vector<LaneToken> tokens_;
  std::vector<std::unique_ptr<OutLane>> out_lanes_;
  std::vector<std::unique_ptr<InLane>> in_lanes_;

  std::atomic<bool> closed_{false};
  std::vector<std::unique_ptr<detail::Inbox>> inboxes_;

  // Requests for the I/O thread, guarded by mu_; wake_fd_ is its eventfd, written when a lane
  // has bytes left for it or shutdown is asked.
  mutable std::mutex mu_;
  bool shutdown_ = false;
  std::vector<LaneEnd> lane_ends_;  // seen by callers reading a lane, for the I/O thread
  int wake_fd_ = -1;

  // Link state for wait_linked(), guarded by link_mu_.
  mutable std::mutex link_mu_;
  std::condition_variable link_cv_;
  std::vector<char> out_up_, in_up_, gone_, lost_;

  // interrupt(): set once; the rank and reason under mu_.
  std::atomic<bool> interrupted_{false};
  int interrupt_rank_ = -1;
  std::string interrupt_why_;

  std::thread thread_;
};

}  // namespace sf::comm::zmq
