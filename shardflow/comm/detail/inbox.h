// Inbox: what one endpoint holds from one source rank — FIFO queues per tag, whether the
// source has gone (and why), whether the endpoint itself has closed — and the blocking receive
// over it, with the PeerLost messages every backend gives. The receive side that the zmq and
// mpi fabrics share (the inproc fabric keeps messages per (src, dst) pair in its own table).
//
// Threading: thread-safe (one mutex per inbox); push() and close_source() come from the
// backend's I/O side, take() from any receiving thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <shardflow/comm/detail/tag_queues.h>
#include <shardflow/comm/transport.h>

namespace sf::comm::detail {

class Inbox {
 public:
  using Clock = std::chrono::steady_clock;

  // Who owns it, for error messages: "<backend>: ... rank <rank> ... rank <src> ...".
  Inbox(std::string_view backend, int rank, int src) : backend_(backend), rank_(rank), src_(src) {}

  // Queues t under tag and wakes its receivers; once the endpoint has closed, drops (releases)
  // it instead and returns false.
  bool push(Tag tag, Tensor t);
  // The source is gone: receives fail, naming it and `why`, once its queue is empty. Returns
  // the closure's order number among this endpoint's (`order` of the call that closed it; the
  // caller counts), or 0 if the source had closed already.
  uint64_t close_source(std::string why, uint64_t order = 1);
  // The order number close_source() recorded, 0 while the source is open.
  uint64_t closed_order() const;
  // The endpoint closed: drops what is held and fails every receive, now and later.
  void close_endpoint();
  // Releases what is held (at destruction of a fabric that never started).
  void release_all();

  // True if take(tag) would return at once (a message, or an error).
  bool ready(Tag tag) const;
  // The oldest message under tag. Waits until `until` at most; returns nothing if none came by
  // then and the deadline is not reached. Throws PeerLost naming the source if the endpoint has
  // closed, or the source has closed and nothing under tag is left, or `deadline` (the
  // receive's, after `timeout`) has passed.
  std::optional<Tensor> take(Tag tag, Clock::time_point until, Clock::time_point deadline,
                             std::chrono::milliseconds timeout);

 private:
  bool ready_locked(Tag tag) const { return queues_.has(tag) || src_closed_ || endpoint_closed_; }

  const std::string_view backend_;
  const int rank_, src_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  TagQueues queues_;
  bool src_closed_ = false, endpoint_closed_ = false;
  std::string closed_why_;
  uint64_t closed_order_ = 0;
};

}  // namespace sf::comm::detail
