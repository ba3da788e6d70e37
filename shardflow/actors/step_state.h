// State shared by the op actors of one Runtime and the thread that calls run(): the bound
// source tensors, the fetched results, the count of fetches still to come in the current
// step, and the first error (typed, core/error_context.h). Actors count `remaining` down; the
// last delivery either wakes the waiting caller or, inside a run_steps() loop, tells the
// driver actor. A streaming runtime (StreamSpec) instead counts, per phase and step of the
// cycle, the nodes still to run, and wakes the owner waiting for one to finish.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include <shardflow/actors/runtime.h>
#include <shardflow/actors/trace.h>
#include <shardflow/core/tensor.h>

namespace sf {

struct StepState {
  std::vector<Tensor> bound;                 // per node id: Parameter value
  std::vector<Tensor> results;               // per fetch index
  std::vector<int> result_regs;              // per fetch index: register holding it
  std::atomic<int> remaining{0};             // fetches still to come in this step
  std::atomic<int> busy{0};                  // 1 while the caller waits
  std::function<void()> on_step_done;        // set while a run_steps() loop drives the steps
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::exception_ptr error;  // first failure, typed, its message naming the op
  TraceRecorder trace;

  // Streaming only: the spec, and per (phase, step in cycle) the nodes still to run.
  const StreamSpec* stream = nullptr;
  std::unique_ptr<std::atomic<int>[]> phase_left;
  std::unique_ptr<std::atomic<int64_t>[]> phase_first;  // when its first node began to fire (ns)
  std::mutex phase_mu;
  std::condition_variable phase_cv;

  std::atomic<int>& left(int phase, int64_t step) { return phase_left[phase * stream->cycle + step % stream->cycle]; }
  // Called by an actor of phase `phase` once it has fired for `step`, having begun at `t0`.
  void phase_fired(int phase, int64_t step, int64_t t0) {
    std::atomic<int64_t>& first = phase_first[phase * stream->cycle + step % stream->cycle];
    int64_t seen = first.load(std::memory_order_relaxed);
    while (t0 < seen && !first.compare_exchange_weak(seen, t0, std::memory_order_relaxed)) {
    }
    if (left(phase, step).fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lk(phase_mu);
      phase_cv.notify_all();
    }
  }

  // Called by an actor when one fetched value is ready.
  void deliver(int fetch_index, const Tensor& t, int reg) {
    results[fetch_index] = t;
    result_regs[fetch_index] = reg;
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      if (on_step_done)
        on_step_done();
      else
        release_caller();
    }
  }
  void release_caller() {
    busy.store(0, std::memory_order_release);
    busy.notify_one();
  }
  void wait_caller() {
    int v;
    while ((v = busy.load(std::memory_order_acquire)) != 0) busy.wait(v);
  }
  // Called by an actor whose op threw: records the first error and wakes the caller, who
  // rethrows it as it was thrown (a PeerLost stays a PeerLost).
  void fail(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lk(error_mu);
      if (!error) error = std::move(e);
    }
    failed.store(true, std::memory_order_release);
    release_caller();
    std::lock_guard<std::mutex> lk(phase_mu);
    phase_cv.notify_all();
  }
};

}  // namespace sf
