// Fabric: the shared message store behind the inproc backend. N virtual ranks in one process
// exchange tensors by reference through one mailbox per ordered pair (src, dst); a mailbox
// holds one FIFO queue per tag, guarded by its own mutex and condition variable, so pairs
// never contend with each other.
//
// Threading: every member function may be called from any thread. The fabric is shared by
// the InprocTransport endpoints of its world (each holds a shared_ptr), so it lives until the
// last endpoint is gone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <shardflow/comm/detail/tag_queues.h>
#include <shardflow/comm/transport.h>
#include <shardflow/core/tensor.h>

namespace sf::comm::inproc {

class Fabric {
 public:
  explicit Fabric(int size);
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  int size() const { return size_; }
  // Appends t to the (src, dst, tag) queue; dropped if dst has closed.
  void post(int src, int dst, Tag tag, const Tensor& t);
  // Pops the oldest (src, dst, tag) message; PeerLost on timeout or once src has closed and
  // its queue is empty.
  Tensor take(int src, int dst, Tag tag, std::chrono::milliseconds timeout);
  // Marks rank closed and wakes every receiver waiting on it.
  void close(int rank);

 private:
  struct Mailbox {
    std::mutex mu;
    std::condition_variable cv;
    detail::TagQueues queues;
    bool src_closed = false;
    bool dst_closed = false;
  };
  Mailbox& box(int src, int dst) { return *boxes_[static_cast<size_t>(src) * size_ + dst]; }

  int size_;
  std::vector<std::unique_ptr<Mailbox>> boxes_;
};

}  // namespace sf::comm::inproc
