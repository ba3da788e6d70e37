#include <shardflow/train/checkpoint/step_dir.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/train/checkpoint/durable_file.h>
#include <shardflow/train/checkpoint/manifest.h>

namespace sf::ckpt {

namespace fs = std::filesystem;

namespace {
constexpr const char* kLatest = "latest";
constexpr size_t kMaxLatestBytes = 256;

std::string incomplete_names(const std::vector<int64_t>& steps) {
  std::vector<std::string> names;
  for (int64_t s : steps) names.push_back(step_dir_name(s));
  return names.empty() ? "none" : brief_names(names, 4);
}
}  // namespace

std::string step_dir_name(int64_t step) { return fmt::format("step_{}", step); }

std::optional<int64_t> parse_step_dir_name(const std::string& name) {
  constexpr std::string_view kPrefix = "step_";
  if (name.size() <= kPrefix.size() || name.size() > kPrefix.size() + 18 || name.rfind(kPrefix, 0) != 0)
    return std::nullopt;
  int64_t n = 0;
  for (size_t i = kPrefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

bool is_committed(const std::string& step_dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(step_dir) / kManifestName, ec);
}

StepListing list_steps(const std::string& dir) {
  StepListing out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_directory(ec)) continue;
    const auto step = parse_step_dir_name(e.path().filename().string());
    if (!step) continue;
    (is_committed(e.path().string()) ? out.committed : out.incomplete).push_back(*step);
  }
  std::sort(out.committed.begin(), out.committed.end());
  std::sort(out.incomplete.begin(), out.incomplete.end());
  return out;
}

void write_latest(const std::string& dir, int64_t step) {
  replace_file((fs::path(dir) / kLatest).string(), step_dir_name(step) + "\n");
}

std::string resolve_step_dir(const std::string& path) {
  std::error_code ec;
  SF_ENFORCE(fs::is_directory(path, ec), IoError, "checkpoint '{}' does not exist or is not a directory",
             brief_text(path));
  const fs::path p(path);
  const bool is_step = is_committed(path) || parse_step_dir_name(p.filename().string()).has_value() ||
                       (p.filename().empty() && parse_step_dir_name(p.parent_path().filename().string()));
  std::string step_dir = path;
  if (!is_step) {
    const fs::path latest = p / kLatest;
    if (!fs::is_regular_file(latest, ec)) {
      const StepListing steps = list_steps(path);
      SF_THROW(IoError, "'{}' holds no committed checkpoint (no 'latest'; committed: {}; incomplete: {})",
               brief_text(path), steps.committed.empty() ? "none" : incomplete_names(steps.committed),
               incomplete_names(steps.incomplete));
    }
    std::string name = read_text_file(latest.string(), kMaxLatestBytes);
    while (!name.empty() && (name.back() == '\n' || name.back() == '\r' || name.back() == ' ')) name.pop_back();
    SF_ENFORCE(parse_step_dir_name(name), IoError, "'{}' names '{}', not a step directory step_<n>",
               brief_text(latest.string()), brief_text(name, 40));
    step_dir = (p / name).string();
    SF_ENFORCE(fs::is_directory(step_dir, ec), IoError, "'{}' names '{}', which does not exist",
               brief_text(latest.string()), name);
  }
  SF_ENFORCE(is_committed(step_dir), IoError,
             "checkpoint '{}' is incomplete: it has no {} (a save that did not commit)", brief_text(step_dir),
             kManifestName);
  return step_dir;
}

std::vector<int64_t> prune_steps(const std::string& dir, int keep) {
  SF_ENFORCE(keep >= 1, InvalidArgument, "keep must be at least 1, got {}", keep);
  const StepListing steps = list_steps(dir);
  std::vector<int64_t> removed;
  if (steps.committed.empty()) return removed;
  const int64_t newest = steps.committed.back();
  const size_t old = steps.committed.size() > static_cast<size_t>(keep) ? steps.committed.size() - keep : 0;
  std::vector<int64_t> doomed(steps.committed.begin(), steps.committed.begin() + static_cast<std::ptrdiff_t>(old));
  for (int64_t s : steps.incomplete)
    if (s < newest) doomed.push_back(s);
  for (int64_t s : doomed) {
    const fs::path d = fs::path(dir) / step_dir_name(s);
    // The manifest goes first: a crash while removing leaves an incomplete step, never a
    // committed one with missing files.
    std::error_code ec;
    fs::remove(d / kManifestName, ec);
    fs::remove_all(d, ec);
    SF_ENFORCE(!ec, IoError, "cannot remove old checkpoint '{}': {}", brief_text(d.string()), ec.message());
    removed.push_back(s);
  }
  if (!removed.empty()) sync_directory(dir);
  return removed;
}

}  // namespace sf::ckpt
