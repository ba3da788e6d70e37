/// @file
/// Saving a distributed checkpoint: a collective over the calling rank's world (virtual ranks
/// in one process, or one rank per process over zmq or MPI; a thread with no rank saves alone)
/// that writes `DIR/step_<n>/` with a two-phase commit (docs/checkpoint_format.md, version 2):
///
///   1. rank 0 prepares `DIR/step_<n>/` (a committed step is refused, an incomplete one
///      replaced); every rank reports what it holds (AllGather of a small JSON text), and every
///      rank derives the same plan: each block of each tensor is written once, by the lowest
///      world rank holding it. A bad request on any rank is refused on every rank here,
///      before a byte is written.
///   2. every rank writes `rank_<r>.data` and fsyncs it, then reports its blocks' offsets and
///      CRC32s (AllGather).
///   3. rank 0 fsyncs the step directory, writes manifest.json.tmp, fsyncs, renames it to
///      manifest.json — the commit — fsyncs the directory, then replaces DIR/latest and prunes
///      old steps (keep). Every rank learns the outcome (AllGather) and returns or throws alike.
///
/// A crash at any moment leaves the previous committed step loadable: a step directory
/// without manifest.json is never loaded (train/checkpoint/reader.h names it incomplete), and
/// DIR/latest only moves after the commit. DIR must be one file system that every rank sees.
///
/// Phase 2's write needs only this rank's blocks (train/checkpoint/rank_file.h): the
/// asynchronous save (train/checkpoint/async_save.h) runs the same three steps below
/// (begin_save, write_pending, finish_save) with the write on a background thread over copies.
///
/// Threading: every rank of the world calls it with the same DIR and step, in the same order
/// as its other collectives.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <shardflow/train/checkpoint/rank_file.h>
#include <shardflow/train/checkpoint/sharded_tensor.h>

namespace sf::ckpt {

/// What to save besides the tensors.
struct SaveOptions {
  int64_t step = 0;            ///< the step directory's n (`DIR/step_<n>`), >= 0
  std::string parallel_mode{};  ///< recorded in the manifest ("stand_alone", "data_parallel", ...)
  nlohmann::json state{};       ///< opaque, stored as the manifest's "state" (rank 0's is kept)
  nlohmann::json rank_state{};  ///< opaque, stored as this rank's "state"
  int keep = 0;                ///< after the commit keep only the newest `keep` steps; 0 keeps all
};

/// What a save did, on this rank.
struct SaveReport {
  std::string step_dir;              ///< `DIR/step_<n>`, committed
  int64_t bytes_written = 0;         ///< this rank's data file
  std::vector<int64_t> removed;      ///< steps pruned by keep (rank 0; empty on the others)
};

/// Saves `tensors` (this rank's) to `DIR/step_<options.step>/` (see the file comment). Every rank
/// lists the tensors it holds; a tensor may be held by some ranks only (a pipeline stage's),
/// but every layout rank of its layout must be held by some rank. Refused alike on every rank
/// (InvalidArgument, or ShapeError for a local block of the wrong shape; IoError for the file
/// system), naming the checkpoint, the rank and the rule: a name listed twice; ranks that
/// disagree on a tensor's shape, dtype or layout; a layout rank no rank holds; a partial
/// layout; a step already committed. Throws PeerLost if a rank does not take part.
/// It is begin_save, write_pending and finish_save in a row.
SaveReport save_checkpoint_dir(const std::string& dir, const std::vector<ShardedTensor>& tensors,
                               const SaveOptions& options);

namespace detail {

/// Phase 1's plan: who writes which block (defined in save.cc).
struct SavePlan;

/// A save past phase 1: agreed on by every rank, its step directory prepared, nothing written.
/// Holds what phases 2 and 3 need, so that the write can run elsewhere (async_save.h).
struct PendingSave {
  std::string dir;                                     ///< the checkpoint directory
  SaveOptions options;                                 ///< as given
  SaveReport report;                                   ///< step_dir set; the rest after finish_save
  std::string what;                                    ///< `checkpoint 'DIR/step_<n>'`, for errors
  std::string rank_path;                               ///< this rank's data file
  std::vector<std::pair<std::string, Tensor>> blocks;  ///< the blocks this rank writes (name, local)
  std::shared_ptr<const SavePlan> plan;                ///< phase 1's plan
  WrittenFile file;                                    ///< set by write_pending
  nlohmann::json write_error;                          ///< null, or write_pending's failure
};

/// Phase 1 (a collective): checks, rank 0 prepares the step directory, every rank agrees on the
/// plan. Throws the refusals save_checkpoint_dir names, on every rank alike.
PendingSave begin_save(const std::string& dir, const std::vector<ShardedTensor>& tensors, const SaveOptions& options);

/// Phase 2's file I/O (no collective; any thread): writes and fsyncs `save.blocks` to
/// `save.rank_path`. A failure is kept in `save.write_error`, reported by finish_save.
void write_pending(PendingSave& save) noexcept;

/// Phase 2's report and phase 3 (collectives, on the rank's thread, after write_pending): rank 0
/// commits; returns the report, or throws the first failure of any rank on every rank alike.
SaveReport finish_save(PendingSave& save);

}  // namespace detail

}  // namespace sf::ckpt
