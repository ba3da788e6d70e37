/// @file
/// LossWatch: the thread that watches an elastic rank's transport while it trains. On the first
/// lost (or closed) peer it interrupts the transport (comm/transport.h), so the step in flight
/// stops within milliseconds whichever peer it waits on, and records who was lost and when. It
/// also notices this process's own freeze (SIGSTOP, a suspended VM): a pause between two of
/// its polls longer than the transport's loss bound means the peers have counted this rank lost.
///
/// Joins (docs/elastic.md, "Rejoin"): in a world that may grow, rank 0 also polls the world's
/// door; a replacement's request makes it tell every peer (comm::join_notice_tag) and interrupt
/// its own transport, and a peer's watch that receives the notice interrupts its transport too,
/// so every rank leaves the step in flight for the agreement, as after a loss. The door is only
/// polled while set_joins_open(true): the training closes it before its last steps, when the
/// peers might finish without rank 0.
///
/// Threading: its own thread polls; set_joins_open from any thread; the other accessors are for
/// the training thread after stop().
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
  /// Starts watching `transport`. `door` (rank 0, or null) is the world's door; `may_grow` says
  /// whether a replacement may join this world (the others then listen for rank 0's notice).
  /// `waiting` are requests the door received in an earlier world that it still holds.
  explicit LossWatch(std::shared_ptr<comm::Transport> transport, comm::JoinDoor* door = nullptr,
                     bool may_grow = false, std::vector<comm::JoinRequest> waiting = {});
  /// Stops the thread.
  ~LossWatch();
  LossWatch(const LossWatch&) = delete;
  LossWatch& operator=(const LossWatch&) = delete;

  /// Stops watching (idempotent).
  void stop();
  /// True once a loss, a freeze or a request to join was seen.
  bool fired() const { return fired_.load(); }
  /// True when it fired for a request to join (at rank 0's door, or told by rank 0).
  bool join_asked() const { return join_asked_.load(); }
  /// The requests rank 0's door holds (those given at construction, then those it received),
  /// oldest first.
  std::vector<comm::JoinRequest> requests() const;
  /// Opens or closes the door (see the file comment); closed at first.
  void set_joins_open(bool open) { joins_open_.store(open); }
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
  // One poll's wait: rank 0's door, rank 0's notice, or a plain sleep. True when a join was asked.
  bool wait_for_join();
  void fire(const std::vector<int>& gone, std::chrono::steady_clock::time_point now, std::chrono::milliseconds frozen);

  std::shared_ptr<comm::Transport> transport_;
  comm::JoinDoor* door_;
  bool may_grow_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> fired_{false};
  std::atomic<bool> join_asked_{false};
  std::atomic<bool> joins_open_{false};
  std::vector<comm::JoinRequest> requests_;
  mutable std::mutex mu_;
  std::vector<int> lost_;
  std::chrono::system_clock::time_point detected_at_;
  std::chrono::steady_clock::time_point detected_steady_;
  std::chrono::milliseconds frozen_for_{0};
  std::thread thread_;
};

}  // namespace sf
