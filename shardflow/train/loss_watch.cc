#include <shardflow/train/loss_watch.h>

#include <optional>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/membership.h>
#include <shardflow/core/error.h>

namespace sf {

namespace {
// Detection is this plus the transport's own (a killed peer's connection ends at once).
constexpr std::chrono::milliseconds kPoll{5};
}  // namespace

LossWatch::LossWatch(std::shared_ptr<comm::Transport> transport, comm::JoinDoor* door, bool may_grow,
                     std::vector<comm::JoinRequest> waiting)
    : transport_(std::move(transport)),
      door_(door),
      may_grow_(may_grow),
      requests_(std::move(waiting)),
      thread_([this] { run(); }) {}

LossWatch::~LossWatch() { stop(); }

void LossWatch::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

bool LossWatch::wait_for_join() {
  if (door_) {
    std::this_thread::sleep_for(kPoll);
    if (!joins_open_.load()) return false;
    std::vector<comm::JoinRequest> got = door_->poll();
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.insert(requests_.end(), got.begin(), got.end());
      if (requests_.empty()) return false;  // a request from an earlier world counts as soon as the door opens
    }
    const Tensor notice = Tensor::full({1}, 1.0f);
    for (int r = 0; r < transport_->size(); ++r)
      if (r != transport_->rank()) transport_->send(r, comm::join_notice_tag(), notice);
    return true;
  }
  if (!may_grow_ || transport_->rank() == 0) {
    std::this_thread::sleep_for(kPoll);
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    // The wait is the poll's sleep; the notice itself says nothing more, and goes back to the pool.
    const std::optional<Tensor> notice = transport_->poll_recv(0, comm::join_notice_tag(), kPoll);
    if (!notice) return false;
    comm::BufferPool::global().release(*notice);
    return true;
  } catch (const Error&) {
    // A lost rank 0 fails at once: the wait is made up.
    std::this_thread::sleep_until(start + kPoll);
    return false;
  }
}

void LossWatch::fire(const std::vector<int>& gone, std::chrono::steady_clock::time_point now,
                     std::chrono::milliseconds frozen) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    lost_ = gone;
    detected_at_ = std::chrono::system_clock::now();
    detected_steady_ = now;
    frozen_for_ = frozen;
  }
  const int first = gone.empty() ? transport_->rank() : gone.front();
  transport_->interrupt(first, frozen.count() ? "was frozen past the heartbeat bound"
                               : gone.empty() ? "stopped the step: a rank joins"
                                              : "was lost");
  fired_.store(true);
}

void LossWatch::run() {
  using Clock = std::chrono::steady_clock;
  const auto bound = transport_->loss_bound();
  auto last = Clock::now();
  while (!stop_.load()) {
    const bool join = wait_for_join();
    const auto now = Clock::now();
    const auto pause = std::chrono::duration_cast<std::chrono::milliseconds>(now - last);
    last = now;
    const std::vector<int> gone = comm::gone_peers(*transport_);
    const bool frozen = bound.count() > 0 && pause >= bound;
    if (gone.empty() && !frozen && !join) continue;
    if (join && gone.empty() && !frozen) join_asked_.store(true);
    fire(gone, now, frozen ? pause : std::chrono::milliseconds(0));
    return;
  }
}

std::vector<comm::JoinRequest> LossWatch::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::vector<int> LossWatch::lost() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

std::chrono::system_clock::time_point LossWatch::detected_at() const {
  std::lock_guard<std::mutex> lock(mu_);
  return detected_at_;
}

std::chrono::steady_clock::time_point LossWatch::detected_steady() const {
  std::lock_guard<std::mutex> lock(mu_);
  return detected_steady_;
}

std::chrono::milliseconds LossWatch::frozen_for() const {
  std::lock_guard<std::mutex> lock(mu_);
  return frozen_for_;
}

}  // namespace sf
