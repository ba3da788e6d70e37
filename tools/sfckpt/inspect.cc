#include "tools/sfckpt/inspect.h"

#include <filesystem>
#include <ostream>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <shardflow/core/error.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/checkpoint/step_dir.h>

namespace sf::sfckpt {
namespace {

// "[[0], []]": the tensor map as the manifest writes it.
std::string map_str(const TensorLayout::TensorMap& map) {
  std::vector<std::string> dims;
  for (const auto& axes : map) dims.push_back(fmt::format("[{}]", fmt::join(axes, ", ")));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// "rows 0:4, cols 0:6" as "[0:4, 0:6]": the box of the global tensor a block holds.
std::string box_str(const std::vector<DimSlice>& slices) {
  std::vector<std::string> dims;
  for (const DimSlice& s : slices) dims.push_back(fmt::format("{}:{}", s.offset, s.offset + s.extent));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// The steps of the directory holding `step_dir`, the one `latest` names marked.
void print_steps(const std::string& step_dir, std::ostream& out) {
  const std::string root = std::filesystem::path(step_dir).parent_path().string();
  const ckpt::StepListing steps = ckpt::list_steps(root);
  std::string latest;
  try {
    latest = std::filesystem::path(ckpt::resolve_step_dir(root)).filename().string();
  } catch (const Error&) {
    // No `latest` (or it names a step that is gone): nothing is marked.
  }
  std::vector<std::string> names;
  for (int64_t s : steps.committed) {
    const std::string name = ckpt::step_dir_name(s);
    names.push_back(name == latest ? name + " (latest)" : name);
  }
  out << fmt::format("committed steps in '{}': {}\n", root, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
  if (!steps.incomplete.empty()) {
    std::vector<std::string> bad;
    for (int64_t s : steps.incomplete) bad.push_back(ckpt::step_dir_name(s));
    out << fmt::format("incomplete steps (no manifest.json): {}\n", fmt::join(bad, ", "));
  }
}

}  // namespace

int inspect(const std::string& path, bool verify, std::ostream& out) {
  ckpt::CheckpointReader reader(path);
  const ckpt::Manifest& m = reader.manifest();
  out << fmt::format("checkpoint '{}': step {}, world size {}, parallel mode {}\n", reader.step_dir(), m.step,
                     m.world_size, m.parallel_mode.empty() ? "(none)" : m.parallel_mode);
  print_steps(reader.step_dir(), out);

  int64_t tensor_bytes = 0;
  out << fmt::format("tensors: {}\n", m.tensors.size());
  for (const ckpt::TensorEntry& t : m.tensors) {
    const int64_t bytes = static_cast<int64_t>(numel(t.shape) * static_cast<int64_t>(dtype_size(t.dtype)));
    tensor_bytes += bytes;
    out << fmt::format("  {}: shape {} {}, {} bytes; layout device_matrix [{}] tensor_map {}\n", t.name,
                       shape_str(t.shape), dtype_name(t.dtype), bytes, fmt::join(t.layout.mesh().dims(), ", "),
                       map_str(t.layout.tensor_map()));
    for (const ckpt::BlockEntry& b : t.blocks)
      out << fmt::format("    ranks [{}] hold {} = {} @ {}, {} bytes, crc32 {:08x}\n", fmt::join(b.ranks, ", "),
                         box_str(t.layout.slice(t.shape, b.ranks.front())), b.file, b.offset, b.bytes, b.crc32);
  }
  int64_t file_bytes = 0;
  for (const ckpt::RankEntry& r : m.ranks) file_bytes += r.bytes;
  out << fmt::format("total: {} bytes of tensors, {} bytes in {} rank files, manifest {} bytes\n", tensor_bytes,
                     file_bytes, m.ranks.size(), reader.manifest_bytes());
  if (!verify) return 0;
  try {
    reader.verify_all();
  } catch (const Error& e) {
    out << "verify: FAILED: " << e.what() << "\n";
    return 1;
  }
  out << fmt::format("verify: OK (every block's crc32, {} bytes read)\n", reader.bytes_read());
  return 0;
}

}  // namespace sf::sfckpt
