// Trace of actor events (which op ran, on which thread, from when to when), written as a
// Chrome/Perfetto trace JSON file ("traceEvents" with complete "X" events).
//
// Each actor appends only to its own lane, so recording takes no lock; the lanes are read
// only between steps, when no actor runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace sf {

struct TraceEvent {
  int64_t start_ns;
  int64_t end_ns;
  uint64_t thread;  // std::hash of the worker's thread id
  int64_t step;
};

class TraceRecorder {
 public:
  // One lane per node id; `names[i]`/`ops[i]` label lane i.
  void reset(std::vector<std::string> names, std::vector<std::string> ops);
  bool enabled() const { return enabled_; }
  void set_enabled(bool on) { enabled_ = on; }
  std::vector<TraceEvent>& lane(int i) { return lanes_[i]; }

  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  static uint64_t this_thread();

  // Writes the Chrome trace JSON; throws IoError if the file cannot be written.
  void write(const std::string& path) const;

 private:
  bool enabled_ = false;
  std::vector<std::string> names_, ops_;
  std::vector<std::vector<TraceEvent>> lanes_;
};

}  // namespace sf
