/// @file
/// The manifest of a distributed checkpoint (version 2, docs/checkpoint_format.md): what a
/// step directory DIR/step_<n>/ holds — the step, the job that saved it, an opaque JSON state,
/// each rank's data file, and per tensor its global shape, dtype, layout and the block each
/// layout rank holds (file, offset, bytes, CRC32). `manifest.json` is written last, by rename:
/// its presence is the commit marker of the step.
///
/// parse_manifest validates everything a loader relies on (versions, fields, every layout rank
/// covered by exactly one block, every block inside its file) so that a reader never indexes
/// past what the manifest promised; messages name the step directory and manifest.json.
///
/// Threading: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <shardflow/core/dtype.h>
#include <shardflow/core/shape.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf::ckpt {

/// The format version this build writes and reads (version 1 is the single-file format of
/// train/checkpoint.h, read by load_checkpoint()).
inline constexpr int kManifestVersion = 2;
/// The manifest's file name inside a step directory.
inline constexpr const char* kManifestName = "manifest.json";
/// The largest manifest a reader parses, 256 MiB.
inline constexpr uint64_t kMaxManifestBytes = uint64_t{256} << 20;

/// One stored block: the bytes of one layout rank's local tensor (row-major), shared by the
/// layout ranks that hold the same block (replicas), written once.
struct BlockEntry {
  std::vector<int> ranks;   ///< the layout ranks holding it, ascending
  std::string file;         ///< its rank file, "rank_3.data"
  int64_t offset = 0;       ///< its first byte in the file
  int64_t bytes = 0;        ///< its length
  uint32_t crc32 = 0;       ///< zlib's crc32 of those bytes
};

/// One tensor of the checkpoint.
struct TensorEntry {
  std::string name;                ///< "fc1.weight", "moments.fc1.weight", "global_step"
  Shape shape;                     ///< global shape
  DType dtype = DType::kF32;       ///< element type
  TensorLayout layout;             ///< how it was held (never partial)
  std::vector<BlockEntry> blocks;  ///< every layout rank in exactly one, ordered by first rank
};

/// One rank of the saving job: its data file and its opaque state.
struct RankEntry {
  int rank = 0;                    ///< world rank
  std::string file;                ///< "rank_<rank>.data"
  int64_t bytes = 0;               ///< the file's size
  nlohmann::json state;            ///< what that rank asked to store (null when nothing)
};

/// A step directory's manifest.
struct Manifest {
  int version = kManifestVersion;  ///< kManifestVersion
  int64_t step = 0;                ///< the training step saved
  int world_size = 1;              ///< ranks of the saving job
  std::string parallel_mode;       ///< the saving job's mode ("stand_alone", "data_parallel", ...)
  nlohmann::json state;            ///< opaque, stored and returned uninterpreted (null when none)
  std::vector<RankEntry> ranks;    ///< one per world rank, by rank
  std::vector<TensorEntry> tensors;  ///< in the order the savers listed them

  /// The tensor `name`, or null.
  const TensorEntry* find(const std::string& name) const;
};

/// The manifest as JSON text (docs/checkpoint_format.md's grammar).
std::string manifest_json(const Manifest& m);
/// Parses and validates manifest text; `where` names it in messages ("checkpoint 'run/step_5':
/// manifest.json"). Throws IoError "<where> is malformed: <rule>" or "<where> is format version
/// 3; this build reads version 2".
Manifest parse_manifest(const std::string& text, const std::string& where);

/// "rank_<r>.data".
std::string rank_file_name(int rank);

}  // namespace sf::ckpt
