/// @file
/// A rank's data file of a distributed checkpoint (`DIR/step_<n>/rank_<r>.data`): the blocks
/// this rank writes, raw row-major bytes one after another, each starting at a multiple of
/// kBlockAlignment (zero padding between), and each one's CRC32. No header: the manifest says
/// where everything is. Written and fsync'ed before the rank reports its blocks to rank 0, so a
/// committed manifest only ever names bytes already on disk.
///
/// The write is a pure function of the tensors it is given, apart from the collective that
/// decides who writes what (train/checkpoint/save.h): an asynchronous save can run it on a
/// background thread over copies of the blocks.
///
/// Threading: independent calls on different paths are safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::ckpt {

/// Where each block starts in a rank file is a multiple of this (a cache line; page-aligned
/// O_DIRECT reads would want 4096).
inline constexpr int64_t kBlockAlignment = 64;

/// One block as written.
struct WrittenBlock {
  std::string name;    ///< the tensor it belongs to
  int64_t offset = 0;  ///< its first byte in the file
  int64_t bytes = 0;   ///< its length
  uint32_t crc32 = 0;  ///< zlib's crc32 of its bytes
};

/// What write_rank_file wrote.
struct WrittenFile {
  int64_t bytes = 0;                 ///< the file's size
  std::vector<WrittenBlock> blocks;  ///< in the order given
};

/// Writes `blocks` (name, local tensor) to `path` and fsyncs it. Throws IoError naming the file.
WrittenFile write_rank_file(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& blocks);

/// zlib's crc32 of `bytes` bytes, continuing from `crc` (0 to start).
uint32_t crc32_of(const void* data, int64_t bytes, uint32_t crc = 0);

}  // namespace sf::ckpt
