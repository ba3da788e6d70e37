// NativeOp: one native collective (comm/native_collectives.h) of the mpi backend. The caller
// fills it and starts it on its own thread (Fabric::start_native); whoever holds the MPI lock
// when MPI reports it finished calls complete() (comm/mpi/collectives.h), which drops the
// tensors. NativeWaiter is the caller's handle: it polls the fabric itself until the op is
// done, its deadline passes or a member's endpoint has closed (a short grace later: the
// collective may still complete from what the member sent before), so a dead or silent peer never
// holds the caller beyond its deadline, even though MPI cannot cancel a collective: a
// given-up operation stays with the fabric, its buffers referenced, until it completes or the
// fabric shuts down.
//
// Threading: `group_id`, `world_ranks` and `req` are written before the op is started and then
// touched only under the fabric's MPI lock; complete() is called once, under that lock;
// done() from any thread; wait_until() by one caller thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <shardflow/comm/native_collectives.h>

namespace sf::comm::mpi {

class Fabric;

struct NativeOp {
  uint32_t group_id = 0;
  std::vector<int> world_ranks;
  NativeRequest req;

  // The operation has finished; releases the request's tensors first, so the caller's output
  // is no longer shared with the backend when it sees done().
  void complete();
  bool done() const { return done_.load(std::memory_order_acquire); }

 private:
  std::atomic<bool> done_{false};
};

class NativeWaiter final : public NativeOperation {
 public:
  NativeWaiter(Fabric& fabric, std::shared_ptr<NativeOp> op) : fabric_(fabric), op_(std::move(op)) {}
  NativeWait wait_until(std::chrono::steady_clock::time_point deadline) override;

 private:
  // The member whose close notice arrived first, or -1.
  int closed_member() const;

  Fabric& fabric_;
  std::shared_ptr<NativeOp> op_;
};

}  // namespace sf::comm::mpi
