#include <shardflow/comm/mpi/native_op.h>

#include <algorithm>

#include <shardflow/comm/mpi/fabric.h>

namespace sf::comm::mpi {

namespace {
// How often the waiter looks at the members' endpoints.
constexpr std::chrono::microseconds kClosedCheck{500};
// How long the waiter goes on after a member's close notice before it reports the member
// closed. The notice comes over the fabric's point-to-point channel, the collective's data on
// the group's own communicator, and MPI orders neither against the other: a member that
// finished the collective (its last piece sent, not yet received here) and then closed is
// often seen closed before that piece has been taken, and the collective still completes.
constexpr std::chrono::milliseconds kClosedGrace{300};
}  // namespace

void NativeOp::complete() {
  req = NativeRequest();
  done_.store(true, std::memory_order_release);
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

// The waiter makes the progress itself, as a blocking MPI call would: no thread to wake on
// the way in, none to wake it on the way out (docs/mpi_transport.md has the figures).
NativeWait NativeWaiter::wait_until(std::chrono::steady_clock::time_point deadline) {
  const auto spin_until = std::chrono::steady_clock::now() + kSpin;
  std::chrono::steady_clock::time_point closed_seen{};
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (op_->done()) return {};
    if (const int w = closed_member(); w >= 0) {
      if (w == fabric_.rank()) return {NativeWait::kPeerClosed, w};  // this endpoint: nothing more can arrive
      if (closed_seen == std::chrono::steady_clock::time_point{}) closed_seen = now;
      if (now >= closed_seen + kClosedGrace) return {NativeWait::kPeerClosed, w};
    }
    if (now >= deadline) return {NativeWait::kTimedOut, -1};
    if (fabric_.drive([&] { return op_->done(); }, Fabric::Scope::kCollectives, std::min(deadline, now + kClosedCheck), spin_until)) return {};
  }
}

}  // namespace sf::comm::mpi
