#include <shardflow/core/text_file.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <shardflow/core/error.h>

namespace sf {

void write_text_file(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  SF_ENFORCE(!ec, IoError, "cannot create directory '{}': {}", target.parent_path().string(), ec.message());
  // The pid keeps processes of one job that write the same path (a shared dump directory)
  // from sharing a temporary file.
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    SF_ENFORCE(f.good(), IoError, "cannot write '{}'", tmp);
    f << text;
    f.flush();
    SF_ENFORCE(f.good(), IoError, "writing '{}' failed", tmp);
  }
  SF_ENFORCE(std::rename(tmp.c_str(), path.c_str()) == 0, IoError, "cannot rename '{}' to '{}'", tmp, path);
}

std::string read_text_file(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  SF_ENFORCE(std::filesystem::exists(path, ec), IoError, "cannot open '{}': no such file", path);
  SF_ENFORCE(std::filesystem::is_regular_file(path, ec), IoError, "cannot read '{}': not a regular file", path);
  const auto size = std::filesystem::file_size(path, ec);
  SF_ENFORCE(!ec && size <= max_bytes, IoError, "cannot read '{}': {} bytes, more than the {} allowed", path,
             ec ? 0 : size, max_bytes);
  std::ifstream f(path, std::ios::binary);
  SF_ENFORCE(f.good(), IoError, "cannot open '{}'", path);
  std::ostringstream s;
  s << f.rdbuf();
  SF_ENFORCE(!f.bad(), IoError, "reading '{}' failed", path);
  return s.str();
}

}  // namespace sf
