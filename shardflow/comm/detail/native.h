// The collectives' side of Algorithm::kNative: hand one call to the group transport's own
// collectives (comm/native_collectives.h) and wait for it under the call's deadline.
//
// The operation is started on the thread that calls the collective, in program order, for
// the async forms too: the backend matches a group's operations by their order, and only the
// caller's thread sees them in the order the program issued them (the group's worker would run
// an async one after a sync one issued later).
//
// Failure: a member whose endpoint closes is named at once; when the deadline passes, Call
// names the stalled rank with its notice protocol (comm/detail/call.h), starting from this
// rank's right-hand neighbour (every live rank blames its own, so the chain of "waits for"
// ends at a silent rank). Either way the group is marked failed.
//
// Threading: as Call; submit_native() may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <utility>

#include <shardflow/comm/detail/async.h>
#include <shardflow/comm/detail/call.h>
#include <shardflow/comm/native_collectives.h>

namespace sf::comm::detail {

// Starts `req` on `group`'s native collectives (which must exist: the table checked).
std::unique_ptr<NativeOperation> start_native(const Group& group, NativeRequest req);

// Waits for `op` until `deadline` (taken right after `call` was made, on `group`); throws
// PeerLost through `call` when it does not finish.
void wait_native(Call& call, const Group& group, NativeOperation& op, std::chrono::steady_clock::time_point deadline);

// A whole native collective, synchronously: `meanwhile()` runs on this thread while the
// backend works (the root of a Broadcast copies its own output), `finish()` turns the finished
// request into the result (unpacks blocks...).
template <class Meanwhile, class Finish>
Tensor run_native(Signature sig, const Group& group, uint32_t seq, std::chrono::milliseconds timeout,
                  NativeRequest req, Meanwhile meanwhile, Finish finish) {
  Call call(std::move(sig), group, seq, timeout);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto started = start_native(group, std::move(req));
  meanwhile();
  wait_native(call, group, *started, deadline);
  return finish();
}

// The async form: takes the sequence number, makes the Call (a failed group or, in debug mode,
// a signature mismatch fails here, before data moves — reported through the Work, as the other
// algorithms' async forms do) and starts `req`, all on the calling thread; the group's worker
// runs meanwhile(), waits, and returns finish().
template <class Meanwhile, class Finish>
Work submit_native(Signature sig, const Group& group, std::chrono::milliseconds timeout, NativeRequest req,
                   Meanwhile meanwhile, Finish finish) {
  const uint32_t seq = group.next_sequence();
  const Group g = group.unowned();  // the task must not own its group (comm/worker.h)
  std::shared_ptr<Call> call;
  std::shared_ptr<NativeOperation> started;
  try {
    call = std::make_shared<Call>(std::move(sig), g, seq, timeout);
    started = start_native(g, std::move(req));
  } catch (...) {
    auto failed = std::make_shared<WorkState>();
    failed->finish(Tensor(), std::current_exception());
    return Work(std::move(failed));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  return submit(group, [g, call, deadline, started, meanwhile, finish]() mutable {
    meanwhile();
    wait_native(*call, g, *started, deadline);
    call.reset();  // closes the call's flight record before the result is handed over
    return finish();
  });
}

// The common case: the result is the request's output as the backend left it.
inline Tensor run_native(Signature sig, const Group& group, uint32_t seq, std::chrono::milliseconds timeout,
                         NativeRequest req) {
  Tensor out = req.output;
  return run_native(std::move(sig), group, seq, timeout, std::move(req), [] {}, [out] { return out; });
}
inline Work submit_native(Signature sig, const Group& group, std::chrono::milliseconds timeout, NativeRequest req) {
  Tensor out = req.output;
  return submit_native(std::move(sig), group, timeout, std::move(req), [] {}, [out] { return out; });
}

}  // namespace sf::comm::detail
