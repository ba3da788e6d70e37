/// @file
/// Work: the handle of an asynchronous collective (`all_reduce_async(...)` and friends), so a
/// caller can compute while the collective runs on its group's worker thread (comm/worker.h).
///
/// Threading: a Work is a cheap shared handle; copies refer to the same operation and every
/// member function may be called from any thread. The operation's own timeout bounds every
/// wait: a Work always finishes, with a result or with the operation's error.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>

#include <shardflow/core/tensor.h>

namespace sf::comm {

namespace detail {
/// Shared between a Work handle and the worker that completes it.
struct WorkState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  Tensor result;
  void finish(Tensor result, std::exception_ptr error);
};
}  // namespace detail

/// The handle of an asynchronous collective.
class Work {
 public:
  Work() = default;  ///< no operation; valid() is false
  /// The handle of the operation whose worker completes `state`.
  explicit Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

  /// False for a default-constructed Work.
  bool valid() const { return state_ != nullptr; }
  /// True once the operation has finished, successfully or not.
  bool done() const;
  /// Waits up to `timeout`. Returns true if the operation succeeded, false if it is still
  /// running at the deadline; rethrows the operation's error if it failed.
  bool wait(std::chrono::milliseconds timeout);
  /// Waits until the operation finishes (bounded by its own timeout), rethrows its error or
  /// returns its result (an undefined tensor for Barrier).
  Tensor get();
  /// The operation's error; null while running or after success.
  std::exception_ptr error() const;

 private:
  std::shared_ptr<detail::WorkState> state_;
};

}  // namespace sf::comm
