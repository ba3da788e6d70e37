#include <shardflow/comm/detail/inbox.h>

#include <shardflow/core/error.h>

namespace sf::comm::detail {

bool Inbox::push(Tag tag, Tensor t) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!endpoint_closed_) {
      queues_.push(tag, std::move(t));
      cv_.notify_all();
      return true;
    }
  }
  BufferPool::global().release(t);  // nobody will read it
  return false;
}

uint64_t Inbox::close_source(std::string why, uint64_t order) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (src_closed_) return 0;
    src_closed_ = true;
    closed_why_ = std::move(why);
    closed_order_ = order;
  }
  cv_.notify_all();
  return order;
}

uint64_t Inbox::closed_order() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_order_;
}

void Inbox::close_endpoint() {
  TagQueues dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    endpoint_closed_ = true;
    dropped = queues_.take_all();
  }
  cv_.notify_all();
  dropped.release_all();  // outside the lock
}

void Inbox::release_all() {
  std::lock_guard<std::mutex> lock(mu_);
  queues_.release_all();
}

bool Inbox::ready(Tag tag) const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_locked(tag);
}

std::optional<Tensor> Inbox::take(Tag tag, Clock::time_point until, Clock::time_point deadline,
                                  std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  // Sleep only when there is something to wait for: a wait that has already timed out still
  // costs a system call, and take(tag, now, ...) is the receive path's first look.
  if (!ready_locked(tag) && std::min(until, deadline) > Clock::now())
    cv_.wait_until(lock, std::min(until, deadline), [&] { return ready_locked(tag); });
  if (endpoint_closed_)
    throw PeerLost(src_,
                   fmt::format("{}: rank {} has closed its own endpoint; cannot receive tag {:#x} from rank {}",
                               backend_, rank_, tag, src_),
                   SF_WHERE);
  if (auto t = queues_.pop(tag)) return t;
  if (src_closed_)
    throw PeerLost(src_, fmt::format("{}: rank {} {}; rank {} waited for tag {:#x}", backend_, src_, closed_why_, rank_, tag),
                   SF_WHERE);
  if (Clock::now() >= deadline)
    throw PeerLost(src_,
                   fmt::format("{}: no message from rank {} to rank {} with tag {:#x} within {} ms", backend_, src_,
                               rank_, tag, timeout.count()),
                   SF_WHERE);
  return std::nullopt;
}

}  // namespace sf::comm::detail
