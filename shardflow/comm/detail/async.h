// Runs a collective on its group's worker thread and hands back the Work that completes when
// it finishes (comm/work.h). The caller validates and takes the sequence number first, on its
// own thread, so bad input throws at the call and program order fixes the sequence.
//
// Threading: submit() may be called from any thread; `run` executes on the group's worker.
#pragma once

#include <exception>
#include <memory>
#include <utility>

#include <shardflow/comm/group.h>
#include <shardflow/comm/work.h>

namespace sf::comm::detail {

// `run` returns the result tensor; it must hold only an unowned Group (Group::unowned()).
template <class F>
Work submit(const Group& group, F run) {
  auto state = std::make_shared<WorkState>();
  group.worker().submit([state, run = std::move(run)]() mutable {
    try {
      Tensor result = run();
      state->finish(std::move(result), nullptr);
    } catch (...) {
      state->finish(Tensor(), std::current_exception());
    }
  });
  return Work(std::move(state));
}

// The async form of a collective validated into `plan`: takes the sequence number now, in
// program order, and runs run(input, options with an unowned group, plan, seq) on the worker.
template <class Options, class Plan, class Run>
Work submit_collective(const Tensor& input, const Options& opts, Plan plan, Run run) {
  const uint32_t seq = opts.group.next_sequence();
  Options o = opts;
  o.group = opts.group.unowned();
  return submit(opts.group, [input, o, plan, seq, run] { return run(input, o, plan, seq); });
}

}  // namespace sf::comm::detail
