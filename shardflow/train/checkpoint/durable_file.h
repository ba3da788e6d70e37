/// @file
/// The file operations a checkpoint's commit protocol rests on (POSIX): writing a file and
/// fsync'ing it before it counts, replacing a small file atomically (temporary file, fsync,
/// rename, fsync of the directory), fsync'ing a directory so the names in it survive a crash,
/// and reading exact byte ranges (pread) of a file opened once.
///
/// Threading: independent objects and calls are safe on different threads.
#pragma once

#include <cstdint>
#include <string>

namespace sf::ckpt {

/// A file being written: created (truncated) on construction, written in order, then sync()'ed.
/// Throws IoError naming the path on any failure.
class DurableWriter {
 public:
  /// Creates (or truncates) `path`.
  explicit DurableWriter(std::string path);
  ~DurableWriter();
  DurableWriter(const DurableWriter&) = delete;
  DurableWriter& operator=(const DurableWriter&) = delete;

  /// Appends `bytes` bytes.
  void write(const void* data, int64_t bytes);
  /// Appends zero bytes up to a multiple of `alignment`.
  void pad_to(int64_t alignment);
  /// Bytes written so far.
  int64_t size() const { return size_; }
  /// fsync, then close: the bytes are on disk when it returns.
  void sync();

 private:
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

/// fsync of directory `dir`: the entries created, renamed or removed in it are on disk.
void sync_directory(const std::string& dir);
/// Writes `text` to `path` + ".tmp", fsyncs it, renames it over `path` and fsyncs the
/// directory: a reader sees the old contents or the new, never part of them.
void replace_file(const std::string& path, const std::string& text);

/// A file opened for reading exact ranges.
class RangeReader {
 public:
  /// Opens `path`; throws IoError naming it if it cannot.
  explicit RangeReader(std::string path);
  ~RangeReader();
  RangeReader(const RangeReader&) = delete;
  RangeReader& operator=(const RangeReader&) = delete;

  /// Reads exactly `bytes` bytes at `offset` into `dst`; IoError naming the path if the file
  /// ends before them or the read fails.
  void read(int64_t offset, int64_t bytes, void* dst) const;

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace sf::ckpt
