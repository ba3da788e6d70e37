#include <shardflow/train/checkpoint/reader.h>

#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/parallel/reshard.h>
#include <shardflow/parallel/reshard_plan.h>
#include <shardflow/train/checkpoint/rank_file.h>
#include <shardflow/train/checkpoint/step_dir.h>

namespace sf::ckpt {

namespace fs = std::filesystem;

CheckpointReader::CheckpointReader(const std::string& path, Verify verify) : verify_(verify) {
  step_dir_ = resolve_step_dir(path);
  what_ = fmt::format("checkpoint '{}'", brief_text(step_dir_));
  const std::string text = read_text_file((fs::path(step_dir_) / kManifestName).string(), kMaxManifestBytes);
  manifest_bytes_ = static_cast<int64_t>(text.size());
  manifest_ = parse_manifest(text, fmt::format("{}: {}", what_, kManifestName));
  // Every rank file is there with the size the manifest recorded, before anything is read.
  for (const RankEntry& r : manifest_.ranks) {
    const fs::path f = fs::path(step_dir_) / r.file;
    std::error_code ec;
    SF_ENFORCE(fs::is_regular_file(f, ec), IoError, "{}: {} is missing", what_, r.file);
    const auto size = static_cast<int64_t>(fs::file_size(f, ec));
    SF_ENFORCE(!ec, IoError, "{}: cannot read the size of {}: {}", what_, r.file, ec.message());
    SF_ENFORCE(size >= r.bytes, IoError, "{}: {} is truncated: {} bytes, the manifest lists {}", what_, r.file, size,
               r.bytes);
    SF_ENFORCE(size == r.bytes, IoError, "{}: {} has {} bytes, the manifest lists {}", what_, r.file, size, r.bytes);
  }
}

const nlohmann::json& CheckpointReader::rank_state(int saved_rank) const {
  SF_ENFORCE(saved_rank >= 0 && saved_rank < manifest_.world_size, InvalidArgument,
             "{} was saved by {} ranks; there is no rank {}", what_, manifest_.world_size, saved_rank);
  return manifest_.ranks[static_cast<size_t>(saved_rank)].state;
}

void CheckpointReader::check_tensors(const std::vector<WantedTensor>& wanted, bool allow_unexpected) const {
  std::vector<std::string> missing, unexpected, misshaped;
  std::set<std::string> names;
  for (const WantedTensor& w : wanted) {
    names.insert(w.name);
    const TensorEntry* t = manifest_.find(w.name);
    if (t == nullptr) {
      missing.push_back(w.name);
    } else if (t->shape != w.shape || t->dtype != w.dtype) {
      misshaped.push_back(fmt::format("{} {} {} saved, {} {} wanted", brief_text(w.name, 40), brief_shape(t->shape),
                                      dtype_name(t->dtype), brief_shape(w.shape), dtype_name(w.dtype)));
    }
  }
  if (!allow_unexpected)
    for (const TensorEntry& t : manifest_.tensors)
      if (!names.count(t.name)) unexpected.push_back(t.name);
  if (missing.empty() && unexpected.empty() && misshaped.empty()) return;
  std::vector<std::string> parts;
  if (!missing.empty()) parts.push_back(fmt::format("missing {} ({})", missing.size(), brief_names(missing, 4)));
  if (!unexpected.empty())
    parts.push_back(fmt::format("unexpected {} ({})", unexpected.size(), brief_names(unexpected, 4)));
  if (!misshaped.empty())
    parts.push_back(fmt::format("mis-shaped {} ({})", misshaped.size(), brief_names(misshaped, 2, 80)));
  std::string list;
  for (const std::string& p : parts) list += (list.empty() ? "" : "; ") + p;
  SF_THROW(InvalidArgument, "{} does not match the tensors wanted: {}", what_, list);
}

const TensorEntry& CheckpointReader::tensor(const std::string& name) const {
  const TensorEntry* t = manifest_.find(name);
  if (t == nullptr) {
    std::vector<std::string> names;
    for (const TensorEntry& e : manifest_.tensors) names.push_back(e.name);
    SF_THROW(NotFound, "{} has no tensor '{}' (it holds {}: {})", what_, brief_text(name, 60), names.size(),
             brief_names(names, 6));
  }
  return *t;
}

const RangeReader& CheckpointReader::file(const std::string& name) {
  auto& f = files_[name];
  if (!f) f = std::make_unique<RangeReader>((fs::path(step_dir_) / name).string());
  return *f;
}

void CheckpointReader::read_block(const TensorEntry& t, const BlockEntry& b, void* dst) {
  file(b.file).read(b.offset, b.bytes, dst);
  bytes_read_ += b.bytes;
  const uint32_t crc = crc32_of(dst, b.bytes);
  SF_ENFORCE(crc == b.crc32, IoError,
             "{}: {}: tensor '{}' block at byte {} ({} bytes) fails its checksum (crc32 {:08x}, manifest {:08x})",
             what_, b.file, brief_text(t.name, 60), b.offset, b.bytes, crc, b.crc32);
}

Tensor CheckpointReader::read(const std::string& name, const TensorLayout& to, int rank) {
  const TensorEntry& t = tensor(name);
  const TargetPlan plan = plan_reshard_target(t.shape, t.dtype, t.layout, to, rank);
  // The block each layout rank of the saved layout reads from.
  std::vector<const BlockEntry*> block_of(static_cast<size_t>(t.layout.mesh().device_count()));
  for (const BlockEntry& b : t.blocks)
    for (int r : b.ranks) block_of[static_cast<size_t>(r)] = &b;

  Tensor out = Tensor::empty(plan.box.shape(), t.dtype);
  auto* dst = static_cast<char*>(out.raw());
  std::vector<char> buffer;
  for (const ReshardPiece& piece : plan.pieces) {
    const BlockEntry& b = *block_of[static_cast<size_t>(piece.source_rank)];
    const RangeReader& f = file(b.file);
    const int64_t first = piece.runs.front().source_offset;
    const int64_t span = piece.runs.back().source_offset + piece.runs.back().bytes - first;
    const bool whole = piece.bytes() == b.bytes;  // every element once: the runs cover the block
    if (piece.runs.size() == 1 && !(verify_ == Verify::kEveryBlockTouched && !whole)) {
      // One run straight into place; verified when it is the whole block.
      const ByteRun& run = piece.runs.front();
      f.read(b.offset + run.source_offset, run.bytes, dst + run.target_offset);
      bytes_read_ += run.bytes;
      const uint32_t crc = whole ? crc32_of(dst + run.target_offset, run.bytes) : b.crc32;
      SF_ENFORCE(crc == b.crc32, IoError,
                 "{}: {}: tensor '{}' block at byte {} ({} bytes) fails its checksum (crc32 {:08x}, manifest {:08x})",
                 what_, b.file, brief_text(t.name, 60), b.offset, b.bytes, crc, b.crc32);
      continue;
    }
    if (whole || verify_ == Verify::kEveryBlockTouched) {
      buffer.resize(static_cast<size_t>(b.bytes));
      read_block(t, b, buffer.data());
      for (const ByteRun& run : piece.runs)
        std::memcpy(dst + run.target_offset, buffer.data() + run.source_offset, static_cast<size_t>(run.bytes));
    } else if (span * 10 <= piece.bytes() * 11) {
      // Runs close together: one read of their span costs at most 10% more than the runs.
      buffer.resize(static_cast<size_t>(span));
      f.read(b.offset + first, span, buffer.data());
      bytes_read_ += span;
      for (const ByteRun& run : piece.runs)
        std::memcpy(dst + run.target_offset, buffer.data() + (run.source_offset - first),
                    static_cast<size_t>(run.bytes));
    } else {
      for (const ByteRun& run : piece.runs) {
        f.read(b.offset + run.source_offset, run.bytes, dst + run.target_offset);
        bytes_read_ += run.bytes;
      }
    }
  }
  return out;
}

Tensor CheckpointReader::read_whole(const std::string& name) {
  const TensorEntry& t = tensor(name);
  return read(name, TensorLayout::replicated(DeviceMatrix({1}), static_cast<int>(t.shape.size())), 0);
}

void CheckpointReader::read_into(ShardedTensor& want) {
  const TensorEntry& t = tensor(want.name);
  SF_ENFORCE(t.shape == want.global && t.dtype == want.local.dtype(), ShapeError,
             "{}: tensor '{}' is {} {}, wanted {} {}", what_, brief_text(want.name, 60), brief_shape(t.shape),
             dtype_name(t.dtype), brief_shape(want.global), dtype_name(want.local.dtype()));
  Tensor got = read(want.name, want.layout, want.layout_rank);
  SF_ENFORCE(got.shape() == want.local.shape(), ShapeError, "{}: tensor '{}': layout rank {} of {} holds {}, not {}",
             what_, brief_text(want.name, 60), want.layout_rank, want.layout.str(), brief_shape(got.shape()),
             brief_shape(want.local.shape()));
  want.local.copy_from(got);
}

void CheckpointReader::verify_all() {
  std::vector<char> buffer;
  for (const TensorEntry& t : manifest_.tensors)
    for (const BlockEntry& b : t.blocks) {
      buffer.resize(static_cast<size_t>(b.bytes));
      read_block(t, b, buffer.data());
    }
}

}  // namespace sf::ckpt
