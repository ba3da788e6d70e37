#include <shardflow/train/log_sink.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/train/rank_log.h>

namespace sf {

namespace {

struct Sink {
  std::mutex mu;
  LogRanks ranks = LogRanks::kRank0;
  std::string job_dir;
  std::ostream* out = &std::cout;
  std::map<std::string, std::unique_ptr<std::ofstream>> files;  // by path; never closed (RankLog refers to them)
};

Sink& sink() {
  static Sink s;
  return s;
}

// One write of line + '\n', then a flush, so that a line is never split. Caller holds the mutex.
void put(std::ostream& out, std::string_view line) {
  std::string whole;
  whole.reserve(line.size() + 1);
  whole.append(line);
  whole.push_back('\n');
  out.write(whole.data(), static_cast<std::streamsize>(whole.size()));
  out.flush();
}

// The file of (job_dir, rank), opened on first use. Caller holds the mutex.
std::ostream& file_locked(Sink& s, const std::string& job_dir, int rank) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(job_dir) / ("rank." + std::to_string(rank));
  const std::string path = (dir / "stdout").string();
  auto it = s.files.find(path);
  if (it != s.files.end()) return *it->second;
  std::error_code ec;
  fs::create_directories(dir, ec);
  SF_ENFORCE(!ec, IoError, "cannot create log directory '{}': {}", brief_text(dir.string()), ec.message());
  auto file = std::make_unique<std::ofstream>(path);
  SF_ENFORCE(file->good(), IoError, "cannot write log file '{}'", brief_text(path));
  return *s.files.emplace(path, std::move(file)).first->second;
}

}  // namespace

LogRanks parse_log_ranks(std::string_view text) {
  if (text == "rank0") return LogRanks::kRank0;
  if (text == "all") return LogRanks::kAll;
  if (text == "files") return LogRanks::kFiles;
  SF_THROW(InvalidArgument, "--log-ranks '{}': expected one of rank0, all, files", brief_text(text, 40));
}

std::string_view log_ranks_name(LogRanks ranks) {
  switch (ranks) {
    case LogRanks::kRank0: return "rank0";
    case LogRanks::kAll: return "all";
    case LogRanks::kFiles: return "files";
  }
  return "rank0";
}

void set_log_ranks(LogRanks ranks, std::string job_dir) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.ranks = ranks;
  s.job_dir = std::move(job_dir);
}

LogRanks get_log_ranks() {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.ranks;
}

std::string log_job_dir() {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.job_dir;
}

void set_log_stdout(std::ostream& out) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.out = &out;
}

void log_line(std::string_view line) {
  Sink& s = sink();
  if (!comm::is_virtual_rank()) {
    std::lock_guard<std::mutex> lock(s.mu);
    put(*s.out, line);
    return;
  }
  const int rank = comm::current_rank().rank();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.ranks == LogRanks::kFiles && s.job_dir.empty()) s.job_dir = new_job_dir("log_output");
  if (!s.job_dir.empty()) put(file_locked(s, s.job_dir, rank), line);
  if (s.ranks == LogRanks::kRank0 && rank == 0) put(*s.out, line);
  if (s.ranks == LogRanks::kAll) put(*s.out, "[rank " + std::to_string(rank) + "] " + std::string(line));
}

void write_line(std::ostream& out, std::string_view line) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  put(out, line);
}

std::ostream& rank_log_file(const std::string& job_dir, int rank) {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  return file_locked(s, job_dir, rank);
}

}  // namespace sf
