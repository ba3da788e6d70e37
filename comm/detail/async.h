// Runs a collective on its group's worker thread and hands back the Work that completes when
// it finishes (comm/work.h). The caller validates and takes the sequence number first, on its
// own thread, so bad input throws at the call and program order fixes the sequence.
//
// Threading: submit() may be called from any thread; `run` executes on the group's worker.
#pragma once

#include <exception>
#include <memory>
#include <utility>

#include "comm/group.h"
#include "comm/work.h"

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

}  // namespace sf::comm::detail
