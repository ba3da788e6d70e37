/// @file
/// LossWatch: the thread that watches an elastic rank's transport while it trains. On the first
/// lost (or closed) peer it interrupts the transport (comm/transport.h), so the step in flight
/// stops within milliseconds whichever peer it waits on, and records who was lost and when. It
/// also notices this process's own freeze (SIGSTOP, a suspended VM): a pause between two of
/// its polls longer than the transport's loss bound means the peers have counted this rank lost.
///
/// Threading: its own thread polls; the accessors are for the training thread after stop().
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/comm/transport.h>

namespace sf {

/// Watches one world's transport (see the file comment).
class LossWatch {
 public:
  /// Starts watching `transport`.
  explicit LossWatch(std::shared_ptr<comm::Transport> transport);
  /// Stops the thread.
  ~LossWatch();
  LossWatch(const LossWatch&) = delete;
  LossWatch& operator=(const LossWatch&) = delete;

  /// Stops watching (idempotent).
  void stop();
  /// True once a loss or a freeze was seen.
  bool fired() const { return fired_.load(); }
  /// The peers lost or closed when it fired, ascending.
  std::vector<int> lost() const;
  /// When it fired.
  std::chrono::system_clock::time_point detected_at() const;
  /// When it fired, on the steady clock (for durations).
  std::chrono::steady_clock::time_point detected_steady() const;
  /// The pause that made it fire when this process was frozen past the loss bound; zero otherwise.
  std::chrono::milliseconds frozen_for() const;

 private:
  void run();

  std::shared_ptr<comm::Transport> transport_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> fired_{false};
  mutable std::mutex mu_;
  std::vector<int> lost_;
  std::chrono::system_clock::time_point detected_at_;
  std::chrono::steady_clock::time_point detected_steady_;
  std::chrono::milliseconds frozen_for_{0};
  std::thread thread_;
};

}  // namespace sf
