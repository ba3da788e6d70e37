#include <shardflow/comm/inproc/fabric.h>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/core/error.h>

namespace sf::comm::inproc {

Fabric::Fabric(int size) : size_(size) {
  SF_ENFORCE(size >= 1, InvalidArgument, "inproc fabric: world size {} must be at least 1", size);
  boxes_.reserve(static_cast<size_t>(size) * size);
  for (int i = 0; i < size * size; ++i) boxes_.push_back(std::make_unique<Mailbox>());
}

void Fabric::post(int src, int dst, Tag tag, const Tensor& t) {
  Mailbox& b = box(src, dst);
  {
    std::lock_guard<std::mutex> lock(b.mu);
    if (!b.dst_closed) {
      b.queues.push(tag, t);
      b.cv.notify_all();
      return;
    }
  }
  BufferPool::global().release(t);  // dropped: give the sender's reference back
}

Tensor Fabric::take(int src, int dst, Tag tag, std::chrono::milliseconds timeout) {
  Mailbox& b = box(src, dst);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(b.mu);
  auto ready = [&] {
    return b.queues.has(tag) || b.src_closed;
  };
  b.cv.wait_until(lock, deadline, ready);
  if (auto t = b.queues.pop(tag)) return std::move(*t);
  if (b.src_closed)
    throw PeerLost(src, fmt::format("inproc: rank {} closed its endpoint; rank {} waited for tag {:#x}", src, dst, tag),
                   SF_WHERE);
  throw PeerLost(src,
                 fmt::format("inproc: no message from rank {} to rank {} with tag {:#x} within {} ms", src, dst, tag,
                             timeout.count()),
                 SF_WHERE);
}

void Fabric::close(int rank) {
  for (int peer = 0; peer < size_; ++peer) {
    Mailbox& out = box(rank, peer);
    {
      std::lock_guard<std::mutex> lock(out.mu);
      out.src_closed = true;
    }
    out.cv.notify_all();
    Mailbox& in = box(peer, rank);
    detail::TagQueues dropped;
    {
      std::lock_guard<std::mutex> lock(in.mu);
      in.dst_closed = true;
      dropped = in.queues.take_all();
    }
    dropped.release_all();
  }
}

}  // namespace sf::comm::inproc
