#include "comm/mpi/native_op.h"

#include <algorithm>

#include "comm/mpi/fabric.h"

namespace sf::comm::mpi {

namespace {
// While asleep, the waiter looks at the members' endpoints this often.
constexpr std::chrono::milliseconds kClosedCheck{10};
}  // namespace

void NativeOp::complete() {
  req = NativeRequest();
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

int NativeWaiter::closed_member() const {
  if (fabric_.closed()) return fabric_.rank();
  int first = -1;  // ranks that notice the first loss may close in turn: blame the first
  uint64_t first_order = 0;
  for (int w : op_->world_ranks) {
    const uint64_t order = w == fabric_.rank() ? 0 : fabric_.peer_closed(w);
    if (order != 0 && (first < 0 || order < first_order)) {
      first = w;
      first_order = order;
    }
  }
  return first;
}

// The waiter sleeps at once rather than spinning or yielding: mpirun binds a rank's threads
// to one core when there are enough cores, so a waiter that stays awake takes that core from
// the MPI thread that does the work (measured: 4 KiB AllReduce, 2 ranks, 18 µs sleeping at
// once vs 22 µs after 200 yields).
NativeWait NativeWaiter::wait_until(std::chrono::steady_clock::time_point deadline) {
  if (op_->done()) return {};
  std::unique_lock<std::mutex> lock(op_->mu_);
  for (;;) {
    if (op_->done()) return {};
    if (const int w = closed_member(); w >= 0) return {NativeWait::kPeerClosed, w};
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return {NativeWait::kTimedOut, -1};
    op_->cv_.wait_until(lock, std::min(deadline, now + kClosedCheck));
  }
}

}  // namespace sf::comm::mpi
