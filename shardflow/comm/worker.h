/// @file
/// Worker: one thread that runs submitted tasks one at a time, in submission order. Each
/// group endpoint (one per (group, rank)) owns one, so a rank's asynchronous collectives on a
/// group run in program order — the order every rank issued them in.
///
/// Threading: submit() may be called from any thread. The destructor runs every task already
/// submitted, then joins the thread; it must not run on the worker thread itself (tasks hold
/// no owning reference to their group, see Group::unowned()).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace sf::comm {

/// One thread that runs submitted tasks in submission order.
class Worker {
 public:
  /// Starts the thread.
  Worker();
  /// Runs the tasks already submitted, then joins the thread.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Queues `task`; it must not throw (collectives catch into their Work).
  void submit(std::function<void()> task);

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sf::comm
