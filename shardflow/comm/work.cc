#include <shardflow/comm/work.h>

#include <shardflow/core/error.h>

namespace sf::comm {

void detail::WorkState::finish(Tensor r, std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(mu);
    result = std::move(r);
    error = std::move(e);
    done = true;
  }
  cv.notify_all();
}

bool Work::done() const {
  SF_ENFORCE(state_, InvalidArgument, "Work::done() on an empty Work handle");
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->done;
}

bool Work::wait(std::chrono::milliseconds timeout) {
  SF_ENFORCE(state_, InvalidArgument, "Work::wait() on an empty Work handle");
  std::unique_lock<std::mutex> lock(state_->mu);
  if (!state_->cv.wait_for(lock, timeout, [&] { return state_->done; })) return false;
  if (state_->error) std::rethrow_exception(state_->error);
  return true;
}

Tensor Work::get() {
  SF_ENFORCE(state_, InvalidArgument, "Work::get() on an empty Work handle");
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [&] { return state_->done; });
  if (state_->error) std::rethrow_exception(state_->error);
  return state_->result;
}

std::exception_ptr Work::error() const {
  SF_ENFORCE(state_, InvalidArgument, "Work::error() on an empty Work handle");
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->error;
}

}  // namespace sf::comm
