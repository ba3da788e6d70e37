/// @file
/// EpochCounter: the epoch a dataset's next walk starts at, kept per reader (the rank walking
/// it), so that numbering continues across Model::train calls as MindSpore's dataset iterator
/// does, and a resumed run (initial_epoch) sees the shuffles of the uninterrupted one.
///
/// Per reader because the virtual ranks of one process may share one Dataset (semi-auto and
/// pipeline parallel read the whole set on every rank): each rank counts its own epochs, so a
/// rank that runs ahead never moves another rank's epoch. The reader is a number: Model::train
/// passes the calling rank (-1 with no ranks); the data layer knows nothing of ranks.
///
/// Threading: every member is thread-safe (a mutex).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

namespace sf::dataset {

/// Per-reader epoch counts of one dataset (and its copies).
class EpochCounter {
 public:
  /// The epoch `reader` walks next: its own count once set, else the one set for all readers.
  int64_t get(int reader) const;
  /// Every reader at `epoch` (their own counts forgotten).
  void set_all(int64_t epoch);
  /// `reader` at `epoch`.
  void set(int reader, int64_t epoch);

 private:
  mutable std::mutex mu_;
  int64_t all_ = 0;
  std::map<int, int64_t> readers_;
};

}  // namespace sf::dataset
