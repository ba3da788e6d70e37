/// @file
/// CheckpointReader: loads a committed distributed checkpoint (docs/checkpoint_format.md,
/// version 2) under any configuration. A rank names each tensor it wants with ITS layout and
/// its index in that layout's device matrix (or asks for it whole) and gets its local block,
/// read from the saving ranks' files by the byte runs parallel/reshard_plan.h plans — only the
/// bytes it needs, with pread.
///
/// Opening refuses, before anything is loaded, with one IoError line naming the step directory
/// and the file: a step without manifest.json ("incomplete"), a manifest malformed or of
/// another version, a missing rank file, a rank file shorter or longer than the manifest says.
/// check_tensors refuses a checkpoint that does not match what the caller holds, listing the
/// missing, unexpected and mis-shaped tensors by name.
///
/// Checksums: every block is stored with its CRC32. A piece of a read that covers a whole
/// source block (same layout, gathering to fewer ranks, any coarser layout) is verified as it
/// is read, at no extra bytes. A piece that covers part of a block cannot be verified without
/// reading the whole block; by default it is not (Verify::kBlocksReadWhole), and the bytes read
/// stay within 1.1x the rank's shard bytes: runs close together are read as one span when that
/// costs at most 10% more, else one pread each. Verify::kEveryBlockTouched reads and verifies
/// every block a read touches, whole (more bytes, counted); verify_all() checks every block of
/// the checkpoint (sfckpt inspect).
///
/// Threading: one thread at a time (each virtual rank opens its own reader).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <shardflow/core/tensor.h>
#include <shardflow/parallel/tensor_layout.h>
#include <shardflow/train/checkpoint/durable_file.h>
#include <shardflow/train/checkpoint/manifest.h>
#include <shardflow/train/checkpoint/sharded_tensor.h>

namespace sf::ckpt {

/// Which blocks a read verifies (see the file comment).
enum class Verify {
  kBlocksReadWhole,    ///< those a read covers whole; bytes read = shard bytes (<= 1.1x with spans)
  kEveryBlockTouched,  ///< every block a read touches, read whole to verify it
};

/// A tensor the caller holds, to compare with what a checkpoint holds.
struct WantedTensor {
  std::string name;           ///< its name in the checkpoint
  Shape shape;                ///< its global shape
  DType dtype = DType::kF32;  ///< its element type
};

/// A committed checkpoint step, opened for reading (see the file comment).
class CheckpointReader {
 public:
  /// Opens the committed step `path` names: DIR (the step DIR/latest names) or DIR/step_<n>.
  /// Throws IoError naming the directory and file (see the file comment).
  explicit CheckpointReader(const std::string& path, Verify verify = Verify::kBlocksReadWhole);

  /// DIR/step_<n>.
  const std::string& step_dir() const { return step_dir_; }
  /// The parsed manifest.
  const Manifest& manifest() const { return manifest_; }
  /// The step saved.
  int64_t step() const { return manifest_.step; }
  /// The checkpoint's opaque state, as saved (null when none).
  const nlohmann::json& state() const { return manifest_.state; }
  /// Saving rank `saved_rank`'s opaque state (null when none); InvalidArgument for a rank
  /// outside the saving job.
  const nlohmann::json& rank_state(int saved_rank) const;
  /// Whether it holds tensor `name`.
  bool has(const std::string& name) const { return manifest_.find(name) != nullptr; }

  /// Refuses (InvalidArgument, one line naming the step directory) a checkpoint that lacks a
  /// wanted tensor, holds one of another shape or dtype, or — unless `allow_unexpected` — holds
  /// one not wanted; every such tensor is listed by name (brief lists).
  void check_tensors(const std::vector<WantedTensor>& wanted, bool allow_unexpected = false) const;

  /// Rank `rank`'s block of tensor `name` under layout `to` (any mesh, any device count).
  /// Throws NotFound for an unknown name, ShapeError for a layout that does not fit the saved
  /// shape, IoError for a read that fails or a block that fails its checksum.
  Tensor read(const std::string& name, const TensorLayout& to, int rank);
  /// The whole tensor `name`.
  Tensor read_whole(const std::string& name);
  /// Fills `want.local` (its shape and dtype checked) with rank want.layout_rank's block of
  /// want.name under want.layout.
  void read_into(ShardedTensor& want);

  /// Reads and verifies every block of the checkpoint; IoError naming the first bad one.
  void verify_all();
  /// Bytes read from rank files so far (the manifest not included).
  int64_t bytes_read() const { return bytes_read_; }
  /// The manifest's size in bytes.
  int64_t manifest_bytes() const { return manifest_bytes_; }

 private:
  const TensorEntry& tensor(const std::string& name) const;
  const RangeReader& file(const std::string& name);
  void read_block(const TensorEntry& t, const BlockEntry& b, void* dst);

  std::string step_dir_;
  std::string what_;  // "checkpoint 'run/step_5'"
  Verify verify_;
  Manifest manifest_;
  int64_t manifest_bytes_ = 0;
  int64_t bytes_read_ = 0;
  std::map<std::string, std::unique_ptr<RangeReader>> files_;
};

}  // namespace sf::ckpt
