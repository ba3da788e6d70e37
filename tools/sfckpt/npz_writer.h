// NpzWriter: a NumPy .npz archive written by hand — a zip of .npy (format 1.0) members,
// STORED (no compression), CRC32 from zlib — one tensor at a time, so an export holds one
// gathered tensor in memory. No zip64: a member or archive past 4 GiB is refused. The archive
// is written to <path>.tmp and renamed by finish(), so a failed export leaves no partial file.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::sfckpt {

/// The .npy bytes of `t` (header then raw little-endian row-major data).
std::string npy_bytes(const Tensor& t);

/// Writes an .npz archive at `path` (see the file comment). Threading: one thread.
class NpzWriter {
 public:
  /// Creates (truncates) `path`.tmp; IoError if it cannot.
  explicit NpzWriter(std::string path);
  /// Removes `path`.tmp unless finish() succeeded.
  ~NpzWriter();
  NpzWriter(const NpzWriter&) = delete;
  NpzWriter& operator=(const NpzWriter&) = delete;
  /// Adds member "<name>.npy" holding `t`; IoError naming the file for a write that fails or
  /// a member past 4 GiB.
  void add(const std::string& name, const Tensor& t);
  /// Writes the central directory, closes the file and renames it to `path`; IoError if that fails.
  void finish();

 private:
  struct Member {
    std::string name;
    uint32_t crc = 0;
    uint32_t size = 0;
    uint32_t offset = 0;
  };
  void write(const std::string& bytes);

  std::string path_;
  std::string tmp_;
  bool finished_ = false;
  std::ofstream out_;
  uint64_t written_ = 0;
  std::vector<Member> members_;
};

}  // namespace sf::sfckpt
