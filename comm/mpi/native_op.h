// NativeOp: one native collective (comm/native_collectives.h) on its way from a caller's
// thread to the fabric's MPI thread and back. The caller fills it and queues it
// (Fabric::start_native); the MPI thread starts and completes it (comm/mpi/collectives.h) and
// calls complete(), which drops the tensors and wakes the waiter. NativeWaiter is the
// caller's handle: it waits with a deadline and watches the members' endpoints, so a dead or
// silent peer never holds the caller beyond its deadline, even though MPI cannot cancel a
// collective: a given-up operation stays with the MPI thread, its buffers referenced, until
// it completes or the fabric shuts down.
//
// Threading: `group_id`, `world_ranks` and `req` are written before the op is queued and then
// read only by the MPI thread; complete() is called once by the MPI thread; wait_until() by
// one caller thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/native_collectives.h"

namespace sf::comm::mpi {

class Fabric;

struct NativeOp {
  uint32_t group_id = 0;
  std::vector<int> world_ranks;
  NativeRequest req;

  // MPI thread: the operation has finished; releases the request's tensors first, so the
  // caller's output is no longer shared with the backend when it wakes.
  void complete();
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  friend class NativeWaiter;
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

class NativeWaiter final : public NativeOperation {
 public:
  NativeWaiter(const Fabric& fabric, std::shared_ptr<NativeOp> op) : fabric_(fabric), op_(std::move(op)) {}
  NativeWait wait_until(std::chrono::steady_clock::time_point deadline) override;

 private:
  // The member whose close notice arrived first, or -1.
  int closed_member() const;

  const Fabric& fabric_;
  std::shared_ptr<NativeOp> op_;
};

}  // namespace sf::comm::mpi
