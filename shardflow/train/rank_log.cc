#include <shardflow/train/rank_log.h>

#include <filesystem>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/train/log_sink.h>

namespace sf {

std::string new_job_dir(const std::string& log_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (int job = 1;; ++job) {
    const fs::path dir = fs::path(log_dir) / std::to_string(job);
    if (fs::exists(dir, ec)) continue;
    fs::create_directories(dir, ec);
    SF_ENFORCE(!ec, IoError, "cannot create log directory '{}': {}", dir.string(), ec.message());
    return dir.string();
  }
}

RankLog::RankLog(const std::string& job_dir) {
  if (job_dir.empty()) return;
  const int rank = comm::get_rank();
  file_ = &rank_log_file(job_dir, rank);
  path_ = (std::filesystem::path(job_dir) / ("rank." + std::to_string(rank)) / "stdout").string();
}

}  // namespace sf
