#include "tools/sfrun/job_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include <shardflow/core/error.h>

namespace sf::sfrun {

std::string peek_job_id(const std::string& log_dir, const std::string& requested) {
  if (!requested.empty()) return requested;
  for (int id = 1;; ++id) {
    std::error_code ec;
    if (!std::filesystem::exists(log_dir + "/" + std::to_string(id), ec)) return std::to_string(id);
  }
}

std::string claim_job_dir(const std::string& log_dir, const std::string& requested) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  SF_ENFORCE(!ec, IoError, "--log-dir {}: cannot create it: {}", log_dir, ec.message());
  if (!requested.empty()) {
    std::filesystem::create_directories(log_dir + "/" + requested, ec);
    SF_ENFORCE(!ec, IoError, "cannot create {}/{}: {}", log_dir, requested, ec.message());
    return requested;
  }
  for (int id = 1; id < 1000000; ++id) {
    const std::string dir = log_dir + "/" + std::to_string(id);
    if (::mkdir(dir.c_str(), 0755) == 0) return std::to_string(id);
    SF_ENFORCE(errno == EEXIST, IoError, "cannot create {}: {}", dir, std::strerror(errno));
  }
  SF_THROW(IoError, "{}: no free job id", log_dir);
}

}  // namespace sf::sfrun
