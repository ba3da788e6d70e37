/// @file
/// FlightRecorder: the last N collectives one rank ran on one group — sequence number, what was
/// called (comm/detail/signature.h), when it started and ended, and how it ended. When a
/// collective times out the rank writes this record to stderr, so a hung or diverged job
/// leaves behind, per rank, what every rank was doing (as PyTorch's NCCL flight recorder does).
///
/// Capacity: SF_COMM_FLIGHT_RECORDS (default 64; 0 turns recording off; at most
/// kMaxFlightRecords, so the records a group keeps and the dump a timeout writes stay small).
/// A record's call text is kept brief (core/brief.h), its error is one bounded line.
///
/// Threading: every member function is thread-safe (a group's collectives may run on the
/// caller's thread and on the group's async worker).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace sf::comm {

/// One collective as the recorder saw it.
struct FlightRecord {
  /// How the collective has ended so far.
  enum class State {
    kRunning,  ///< not ended yet
    kDone,     ///< ended normally
    kFailed,   ///< ended with an error
  };
  uint32_t seq = 0;  ///< the group's sequence number of the call
  std::string call;  ///< "AllReduce f32(1000) op=0"
  std::chrono::steady_clock::time_point start;  ///< when it was called
  std::chrono::steady_clock::time_point end;    ///< when it ended (if it has)
  State state = State::kRunning;                ///< how it ended
  std::string error;  ///< first line of the failure, when failed
};

/// "running", "done" or "failed".
std::string_view state_name(FlightRecord::State s);

/// Each record is at most a few hundred bytes: 4096 of them are about 2 MB per group.
inline constexpr size_t kMaxFlightRecords = 4096;

/// The last records of one group on one rank, dumped when a collective times out.
class FlightRecorder {
 public:
  /// Capacity from SF_COMM_FLIGHT_RECORDS; InvalidArgument if it is not a whole number in
  /// 0 .. kMaxFlightRecords.
  FlightRecorder();
  /// Keeps the last `capacity` records (0: none).
  explicit FlightRecorder(size_t capacity) : capacity_(capacity) {}

  /// Records the start of call `seq`, described by `call`, dropping the oldest record if full.
  void begin(uint32_t seq, std::string call);
  /// Updates the record of `seq` if it is still kept.
  void end(uint32_t seq, FlightRecord::State state, std::string error = {});
  /// Oldest first.
  std::vector<FlightRecord> records() const;
  /// One header line, then a line per record: "  seq 3 AllReduce f32(1000) op=0: running for 2.013 s".
  std::string dump(std::string_view header) const;

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::deque<FlightRecord> records_;
};

}  // namespace sf::comm
