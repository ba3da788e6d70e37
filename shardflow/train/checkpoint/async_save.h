/// @file
/// AsyncCheckpointWriter: a distributed checkpoint save (train/checkpoint/save.h) that blocks
/// the caller only for phase 1's agreement and one memcpy of each block this rank writes; a
/// background thread writes and fsyncs the copies, and the save is finished (its commit) at the
/// next save() or wait().
///
///   save():  phase 1 on the caller (the same collective as save_checkpoint_dir: refusals before
///            a byte is written, on every rank alike); the blocks this rank writes are copied into
///            staging buffers the writer owns (reused across saves of the same shapes); a thread
///            starts writing and fsync'ing `rank_<r>.data` from them; save() returns.
///   wait():  joins that thread, then phase 2's report and phase 3 (rank 0's commit, the outcome)
///            on the caller; returns the SaveReport or throws the save's error on every rank alike.
///
/// Why it is sound: every collective (comm::all_gather through all_gather_text) still runs on the
/// rank's own thread, at points of its program every rank reaches in the same order (save() and
/// wait() are collectives like save_checkpoint_dir), so they never interleave with the training
/// step's collectives; the background thread does file I/O only, on copies, so the caller may
/// change its tensors as soon as save() returns. The commit protocol is save.h's unchanged: the
/// manifest is written only after every rank's file is fsync'ed and reported, so a crash at any
/// moment, the background write included, leaves the previous committed step loadable.
///
/// Threading: one writer per rank, used from the rank's thread. Every rank calls save() and
/// wait() alike and in the same order as its other collectives. The destructor waits (a
/// collective too); it swallows the save's error, so call wait() to learn it.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/train/checkpoint/save.h>

namespace sf::ckpt {

/// Saves checkpoints with the write in the background (see the file comment).
class AsyncCheckpointWriter {
 public:
  /// A writer with nothing in flight and no staging buffers yet.
  AsyncCheckpointWriter() = default;
  /// Waits for a save in flight; its error, if any, is dropped (never thrown from here).
  ~AsyncCheckpointWriter();
  AsyncCheckpointWriter(const AsyncCheckpointWriter&) = delete;
  AsyncCheckpointWriter& operator=(const AsyncCheckpointWriter&) = delete;

  /// Finishes the save in flight (throwing its error, and then starting nothing), then starts
  /// saving `tensors` to `DIR/step_<options.step>/` as save_checkpoint_dir does, returning once
  /// the blocks are copied and the write runs in the background. Phase 1's refusals are thrown
  /// here, on every rank alike, as save_checkpoint_dir throws them.
  void save(const std::string& dir, const std::vector<ShardedTensor>& tensors, const SaveOptions& options);
  /// As save(), for tensors that are the save's own — fresh copies no one else writes, such as
  /// capture_training_state's: the background thread writes them as they are, with no staging
  /// copy (the caller must not change them until the save is waited for).
  void save_owned(const std::string& dir, const std::vector<ShardedTensor>& tensors, const SaveOptions& options);
  /// Finishes the save in flight: its report once committed, or nullopt if none is in flight.
  /// Throws the save's error (IoError, ...) on every rank alike; the save is over either way.
  std::optional<SaveReport> wait();
  /// Whether a save is in flight (started and not yet waited for).
  bool in_flight() const { return pending_.has_value(); }
  /// Whether the save in flight has its file written and fsync'ed (wait() then only runs the
  /// commit's collectives); true when none is in flight. A loop may poll it to wait() later.
  bool written() const { return written_.load(std::memory_order_acquire); }

 private:
  void start(const std::string& dir, const std::vector<ShardedTensor>& tensors, const SaveOptions& options, bool copy);
  std::optional<detail::PendingSave> pending_;
  std::thread writer_;
  std::vector<Tensor> staging_;  // the copies, reused while shapes and dtypes match
  std::atomic<bool> written_{true};
};

}  // namespace sf::ckpt
