// Test support for the comm layer: run one thread per rank and collect what each threw.
//
// run_ranks(n, fn) calls fn(rank) on n threads at once and rethrows the first failure (the
// earliest in time) on the test thread. Every wait has a deadline: if a rank is still running
// when it passes, the process aborts with a message, so a hang fails ctest fast instead of
// stalling it (threads cannot be cancelled, and the transport they use is about to be
// destroyed, so there is nothing safer to do).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sf::commtest {

inline constexpr std::chrono::seconds kJoinDeadline{30};

// Runs fn(rank) on n threads; returns each rank's exception (null if it returned normally).
inline std::vector<std::exception_ptr> run_ranks_collect(int n, const std::function<void(int)>& fn,
                                                         std::chrono::seconds deadline = kJoinDeadline) {
  std::vector<std::exception_ptr> errors(n);
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::exception_ptr e;
      try {
        fn(r);
      } catch (...) {
        e = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      errors[r] = e;
      ++finished;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, deadline, [&] { return finished == n; })) {
      std::fprintf(stderr, "run_ranks: %d of %d ranks still running after %lld s: aborting\n", n - finished, n,
                   static_cast<long long>(deadline.count()));
      std::abort();
    }
  }
  for (auto& t : threads) t.join();
  return errors;
}

// Runs fn(rank) on n threads and rethrows the first failure in time.
inline void run_ranks(int n, const std::function<void(int)>& fn, std::chrono::seconds deadline = kJoinDeadline) {
  std::mutex mu;
  std::exception_ptr first;
  run_ranks_collect(
      n,
      [&](int r) {
        try {
          fn(r);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (!first) first = std::current_exception();
        }
      },
      deadline);
  if (first) std::rethrow_exception(first);
}

}  // namespace sf::commtest
