#include <shardflow/train/checkpoint/durable_file.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::ckpt {

DurableWriter::DurableWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SF_ENFORCE(fd_ >= 0, IoError, "cannot write '{}': {}", brief_text(path_), std::strerror(errno));
}

DurableWriter::~DurableWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void DurableWriter::write(const void* data, int64_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, static_cast<size_t>(bytes));
    if (n < 0 && errno == EINTR) continue;
    SF_ENFORCE(n > 0, IoError, "writing '{}' failed: {}", brief_text(path_), std::strerror(errno));
    p += n;
    bytes -= n;
    size_ += n;
  }
}

void DurableWriter::pad_to(int64_t alignment) {
  static const std::vector<char> zeros(4096, 0);
  int64_t pad = (alignment - size_ % alignment) % alignment;
  while (pad > 0) {
    const int64_t n = std::min<int64_t>(pad, static_cast<int64_t>(zeros.size()));
    write(zeros.data(), n);
    pad -= n;
  }
}

void DurableWriter::sync() {
  SF_ENFORCE(::fsync(fd_) == 0, IoError, "fsync of '{}' failed: {}", brief_text(path_), std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  SF_ENFORCE(::close(fd) == 0, IoError, "closing '{}' failed: {}", brief_text(path_), std::strerror(errno));
}

void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  SF_ENFORCE(fd >= 0, IoError, "cannot open directory '{}': {}", brief_text(dir), std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  SF_ENFORCE(rc == 0, IoError, "fsync of directory '{}' failed: {}", brief_text(dir), std::strerror(err));
}

void replace_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  DurableWriter w(tmp);
  w.write(text.data(), static_cast<int64_t>(text.size()));
  w.sync();
  SF_ENFORCE(std::rename(tmp.c_str(), path.c_str()) == 0, IoError, "cannot rename '{}' to '{}': {}", brief_text(tmp),
             brief_text(path), std::strerror(errno));
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  sync_directory(parent.empty() ? "." : parent.string());
}

RangeReader::RangeReader(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  SF_ENFORCE(fd_ >= 0, IoError, "cannot open '{}': {}", brief_text(path_), std::strerror(errno));
}

RangeReader::~RangeReader() {
  if (fd_ >= 0) ::close(fd_);
}

void RangeReader::read(int64_t offset, int64_t bytes, void* dst) const {
  char* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, p, static_cast<size_t>(bytes), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    SF_ENFORCE(n >= 0, IoError, "reading '{}' failed: {}", brief_text(path_), std::strerror(errno));
    SF_ENFORCE(n > 0, IoError, "'{}' is truncated: it ends at byte {}, {} bytes short of what the manifest lists",
               brief_text(path_), offset, bytes);
    p += n;
    bytes -= n;
    offset += n;
  }
}

}  // namespace sf::ckpt
