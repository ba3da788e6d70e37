#include <shardflow/train/loss_watch.h>

#include <shardflow/comm/membership.h>

namespace sf {

namespace {
// Detection is this plus the transport's own (a killed peer's connection ends at once).
constexpr std::chrono::milliseconds kPoll{5};
}  // namespace

LossWatch::LossWatch(std::shared_ptr<comm::Transport> transport)
    : transport_(std::move(transport)), thread_([this] { run(); }) {}

LossWatch::~LossWatch() { stop(); }

void LossWatch::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void LossWatch::run() {
  using Clock = std::chrono::steady_clock;
  const auto bound = transport_->loss_bound();
  auto last = Clock::now();
  while (!stop_.load()) {
    std::this_thread::sleep_for(kPoll);
    const auto now = Clock::now();
    const auto pause = std::chrono::duration_cast<std::chrono::milliseconds>(now - last);
    last = now;
    const std::vector<int> gone = comm::gone_peers(*transport_);
    const bool frozen = bound.count() > 0 && pause >= bound;
    if (gone.empty() && !frozen) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      lost_ = gone;
      detected_at_ = std::chrono::system_clock::now();
      detected_steady_ = now;
      if (frozen) frozen_for_ = pause;
    }
    const int first = gone.empty() ? transport_->rank() : gone.front();
    transport_->interrupt(first, frozen ? "was frozen past the heartbeat bound" : "was lost");
    fired_.store(true);
    return;
  }
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
