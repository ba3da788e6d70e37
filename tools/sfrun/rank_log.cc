#include "tools/sfrun/rank_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include "tools/sfrun/remote.h"

namespace sf::sfrun {

namespace {

int open_log(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SF_ENFORCE(fd >= 0, IoError, "cannot write log file {}: {}", path, std::strerror(errno));
  return fd;
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk or closed terminal must not stop the job
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

RankLog::RankLog(int rank, std::string rank_dir, bool tee, bool expect_pid_marker)
    : rank_(rank), dir_(std::move(rank_dir)), await_marker_(expect_pid_marker) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  SF_ENFORCE(!ec, IoError, "cannot create log directory {}: {}", dir_, ec.message());
  out_.fd = open_log(dir_ + "/stdout");
  err_.fd = open_log(dir_ + "/stderr");
  std::filesystem::remove(dir_ + "/pid", ec);
  if (tee) {
    out_.tee_fd = 1;
    err_.tee_fd = 2;
  }
}

RankLog::~RankLog() {
  for (int fd : {out_.fd, err_.fd})
    if (fd >= 0) ::close(fd);
}

void RankLog::write_pid(pid_t pid) {
  pid_ = pid;
  const int fd = ::open((dir_ + "/pid").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  write_all(fd, fmt::format("{}\n", pid));
  ::close(fd);
}

void RankLog::on_stdout(std::string_view bytes) {
  if (await_marker_) {
    marker_buf_.append(bytes);
    const auto nl = marker_buf_.find('\n');
    if (nl == std::string::npos && marker_buf_.size() < 256) return;
    await_marker_ = false;
    std::string rest = marker_buf_;
    const std::string prefix = std::string(kPidMarker) + " ";
    if (nl != std::string::npos && rest.rfind(prefix, 0) == 0) {
      write_pid(static_cast<pid_t>(std::atol(rest.c_str() + prefix.size())));
      rest.erase(0, nl + 1);
    }
    marker_buf_.clear();
    feed(out_, rest, false);
    return;
  }
  feed(out_, bytes, false);
}

void RankLog::on_stderr(std::string_view bytes) { feed(err_, bytes, true); }

void RankLog::feed(Stream& s, std::string_view bytes, bool is_err) {
  write_all(s.fd, bytes);
  s.partial.append(bytes);
  size_t start = 0;
  for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1)
    line(s, std::string_view(s.partial).substr(start, nl - start), is_err);
  s.partial.erase(0, start);
  // A program that never ends its line still gets its bytes to the terminal, in pieces.
  if (s.partial.size() > 64 * 1024) {
    line(s, s.partial, is_err);
    s.partial.clear();
  }
}

void RankLog::line(Stream& s, std::string_view text, bool is_err) {
  if (s.tee_fd >= 0) write_all(s.tee_fd, fmt::format("[rank {}] {}\n", rank_, text));
  if (listener_) listener_(text);
  if (!is_err) return;
  if (!text.empty()) last_err_ = std::string(text);
  if (comm_report_.empty() && text.find("shardflow comm: rank") != std::string_view::npos &&
      text.find("timed out") != std::string_view::npos)
    comm_report_ = std::string(text);
}

void RankLog::finish() {
  if (await_marker_ && !marker_buf_.empty()) {
    await_marker_ = false;
    std::string rest;
    rest.swap(marker_buf_);
    feed(out_, rest, false);
  }
  await_marker_ = false;
  for (Stream* s : {&out_, &err_}) {
    if (!s->partial.empty()) line(*s, s->partial, s == &err_);
    s->partial.clear();
  }
}

void RankLog::start_again(bool expect_pid_marker) {
  finish();
  await_marker_ = expect_pid_marker;
  pid_ = 0;
  std::error_code ec;
  std::filesystem::remove(dir_ + "/pid", ec);  // the last process's; the new one's comes at its start
}

}  // namespace sf::sfrun
