// The collective save of a distributed checkpoint: the three phases of save.h's comment.
#include <shardflow/train/checkpoint/save.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <map>
#include <set>

#include <fmt/format.h>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/fault_point.h>
#include <shardflow/parallel/shard_box.h>
#include <shardflow/train/checkpoint/durable_file.h>
#include <shardflow/train/checkpoint/gather_text.h>
#include <shardflow/train/checkpoint/manifest.h>
#include <shardflow/train/checkpoint/rank_file.h>
#include <shardflow/train/checkpoint/step_dir.h>

namespace sf::ckpt {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// An error found on one rank, carried to every rank so they all throw the same.
struct Failure {
  std::string kind;  // "io", "shape" or "invalid"
  std::string message;
};

Failure failure_of(const std::exception& e) {
  if (dynamic_cast<const IoError*>(&e)) return {"io", e.what()};
  if (dynamic_cast<const ShapeError*>(&e)) return {"shape", e.what()};
  return {"invalid", e.what()};
}

// Runs `fn`, turning an sf::Error into a Failure (other exceptions are bugs and propagate).
template <class Fn>
std::optional<Failure> capture(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return failure_of(e);
  }
  return std::nullopt;
}

json failure_json(const std::optional<Failure>& f) {
  return f ? json{{"kind", f->kind}, {"message", f->message}} : json(nullptr);
}

// Throws the first failure any rank reported, on every rank, naming that rank.
void throw_first_failure(const std::vector<json>& reports, const std::string& what) {
  for (size_t r = 0; r < reports.size(); ++r) {
    const json& f = reports[r]["error"];
    if (f.is_null()) continue;
    const std::string msg = fmt::format("{}: rank {}: {}", what, r, f["message"].get<std::string>());
    const std::string kind = f["kind"].get<std::string>();
    if (kind == "io") throw IoError(msg);
    if (kind == "shape") throw ShapeError(msg);
    throw InvalidArgument(msg);
  }
}

std::vector<json> gather_json(const json& mine) {
  std::vector<json> out;
  for (const std::string& t : all_gather_text(mine.dump())) out.push_back(json::parse(t));
  return out;
}

// What one rank holds of one tensor, as reported in phase 1.
json holding_json(const ShardedTensor& t) {
  return {{"name", t.name},
          {"shape", t.global},
          {"dtype", std::string(dtype_name(t.local.dtype()))},
          {"mesh", t.layout.mesh().dims()},
          {"map", t.layout.tensor_map()},
          {"names", t.layout.axis_names()},
          {"layout_rank", t.layout_rank}};
}

}  // namespace

namespace detail {

// One tensor of the plan every rank derives from the phase-1 reports.
struct PlannedTensor {
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;
  TensorLayout layout;
  int first_rank = 0;                     // the first rank that reported it
  std::vector<std::vector<int>> holders;  // per layout rank, the world ranks holding it
  std::vector<BlockEntry> blocks;         // ranks and file; offset, bytes, crc32 after phase 2
  std::vector<int> writers;               // per block, its writing world rank
};

struct SavePlan {
  std::vector<PlannedTensor> tensors;
};

}  // namespace detail

namespace {

using detail::PlannedTensor;

std::vector<PlannedTensor> plan(const std::vector<json>& reports) {
  std::vector<PlannedTensor> out;
  std::map<std::string, size_t> index;
  for (size_t r = 0; r < reports.size(); ++r) {
    for (const json& h : reports[r]["tensors"]) {
      const std::string name = h["name"].get<std::string>();
      const std::string tn = fmt::format("tensor '{}'", brief_text(name, 60));
      TensorLayout layout(DeviceMatrix(h["mesh"].get<std::vector<int64_t>>()),
                          h["map"].get<TensorLayout::TensorMap>(), {}, h["names"].get<std::vector<std::string>>());
      const Shape shape = h["shape"].get<Shape>();
      const DType dtype = h["dtype"] == "f32" ? DType::kF32 : DType::kI32;
      auto [it, fresh] = index.emplace(name, out.size());
      if (fresh) {
        PlannedTensor p;
        p.name = name;
        p.shape = shape;
        p.dtype = dtype;
        p.layout = layout;
        p.first_rank = static_cast<int>(r);
        p.holders.resize(static_cast<size_t>(layout.mesh().device_count()));
        out.push_back(std::move(p));
      }
      PlannedTensor& p = out[it->second];
      SF_ENFORCE(p.shape == shape && p.dtype == dtype && p.layout == layout, InvalidArgument,
                 "{} differs between ranks: rank {} holds {} {} under {}, rank {} {} {} under {}", tn,
                 p.first_rank, brief_shape(p.shape), dtype_name(p.dtype), p.layout.str(), r,
                 brief_shape(shape), dtype_name(dtype), layout.str());
      p.holders[h["layout_rank"].get<size_t>()].push_back(static_cast<int>(r));
    }
  }
  for (PlannedTensor& p : out) {
    std::set<int> done;
    for (int lr = 0; lr < static_cast<int>(p.holders.size()); ++lr) {
      if (done.count(lr)) continue;
      BlockEntry b;
      b.ranks = p.layout.replica_group(lr);
      int writer = -1;
      for (int g : b.ranks) {
        done.insert(g);
        for (int w : p.holders[static_cast<size_t>(g)])
          if (writer < 0 || w < writer) writer = w;
      }
      SF_ENFORCE(writer >= 0, InvalidArgument, "tensor '{}': layout rank {} of {} is held by no rank",
                 brief_text(p.name, 60), lr, p.layout.str());
      b.file = rank_file_name(writer);
      p.blocks.push_back(std::move(b));
      p.writers.push_back(writer);
    }
  }
  return out;
}

// Phase 1, this rank's part: its holdings checked (names unique, blocks the shape their layout
// gives them).
void check_holdings(const std::vector<ShardedTensor>& tensors) {
  std::set<std::string> names;
  for (const ShardedTensor& t : tensors) {
    const std::string tn = fmt::format("tensor '{}'", brief_text(t.name, 60));
    SF_ENFORCE(names.insert(t.name).second, InvalidArgument, "{} is listed twice", tn);
    SF_ENFORCE(t.local.defined(), InvalidArgument, "{} has no value", tn);
    const ShardBox box = shard_box(t.layout, t.global, t.layout_rank, tn);
    SF_ENFORCE(box.shape() == t.local.shape(), ShapeError, "{}: layout rank {} of {} holds a block of {}, not {}", tn,
               t.layout_rank, t.layout.str(), brief_shape(box.shape()), brief_shape(t.local.shape()));
  }
}

// Rank 0, before phase 1's report: a fresh step directory.
void prepare_step_dir(const std::string& dir, const std::string& step_dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  SF_ENFORCE(!ec, IoError, "cannot create checkpoint directory '{}': {}", brief_text(dir), ec.message());
  SF_ENFORCE(!is_committed(step_dir), InvalidArgument, "'{}' is already committed; a step is saved once",
             brief_text(step_dir));
  fs::remove_all(step_dir, ec);  // an incomplete save of the same step
  SF_ENFORCE(!ec, IoError, "cannot remove incomplete checkpoint '{}': {}", brief_text(step_dir), ec.message());
  fs::create_directory(step_dir, ec);
  SF_ENFORCE(!ec, IoError, "cannot create '{}': {}", brief_text(step_dir), ec.message());
}

// Rank 0, phase 3: the manifest from the plan and every rank's phase-2 report, then the commit.
std::vector<int64_t> commit(const std::string& dir, const std::string& step_dir,
                            const std::vector<PlannedTensor>& planned,
                            const std::vector<json>& written, const SaveOptions& options) {
  Manifest m;
  m.step = options.step;
  m.world_size = static_cast<int>(written.size());
  m.parallel_mode = options.parallel_mode;
  m.state = options.state;
  for (size_t r = 0; r < written.size(); ++r)
    m.ranks.push_back(RankEntry{static_cast<int>(r), rank_file_name(static_cast<int>(r)),
                                written[r]["bytes"].get<int64_t>(), written[r]["state"]});
  for (const PlannedTensor& p : planned) {
    TensorEntry t{p.name, p.shape, p.dtype, p.layout, {}};
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      BlockEntry e = p.blocks[b];
      const json& blocks = written[static_cast<size_t>(p.writers[b])]["blocks"];
      const auto it = std::find_if(blocks.begin(), blocks.end(), [&](const json& x) { return x["name"] == p.name; });
      SF_ENFORCE(it != blocks.end(), IoError, "rank {} did not report tensor '{}'", p.writers[b], brief_text(p.name));
      e.offset = (*it)["offset"].get<int64_t>();
      e.bytes = (*it)["bytes"].get<int64_t>();
      e.crc32 = (*it)["crc32"].get<uint32_t>();
      t.blocks.push_back(std::move(e));
    }
    m.tensors.push_back(std::move(t));
  }
  // Every rank file's name is on disk before the manifest that names it.
  sync_directory(step_dir);
  replace_file((fs::path(step_dir) / kManifestName).string(), manifest_json(m));
  sync_directory(dir);
  write_latest(dir, options.step);
  return options.keep > 0 ? prune_steps(dir, options.keep) : std::vector<int64_t>{};
}

}  // namespace

namespace detail {

PendingSave begin_save(const std::string& dir, const std::vector<ShardedTensor>& tensors, const SaveOptions& options) {
  comm::RankContext* ctx = comm::current_rank_or_null();
  const int rank = ctx ? ctx->rank() : 0;
  PendingSave save;
  save.dir = dir;
  save.options = options;
  save.report.step_dir = (fs::path(dir) / step_dir_name(options.step)).string();
  save.what = fmt::format("checkpoint '{}'", brief_text(save.report.step_dir));
  save.rank_path = (fs::path(save.report.step_dir) / rank_file_name(rank)).string();

  // Phase 1: what every rank holds; rank 0 has prepared the directory before it reports.
  std::optional<Failure> failed = capture([&] {
    SF_ENFORCE(options.step >= 0, InvalidArgument, "step must be >= 0, got {}", options.step);
    SF_ENFORCE(options.keep >= 0, InvalidArgument, "keep must be >= 0, got {}", options.keep);
    check_holdings(tensors);
    if (rank == 0) prepare_step_dir(dir, save.report.step_dir);
  });
  json holdings{{"error", failure_json(failed)}, {"tensors", json::array()}};
  if (!failed)
    for (const ShardedTensor& t : tensors) holdings["tensors"].push_back(holding_json(t));
  const std::vector<json> reports = gather_json(holdings);
  throw_first_failure(reports, save.what + ": save refused");
  auto planned = std::make_shared<SavePlan>();
  try {
    planned->tensors = plan(reports);
  } catch (const Error& e) {
    SF_THROW(InvalidArgument, "{}: save refused: {}", save.what, e.what());
  }
  for (const PlannedTensor& p : planned->tensors)
    for (size_t b = 0; b < p.blocks.size(); ++b)
      if (p.writers[b] == rank)
        for (const ShardedTensor& t : tensors)
          if (t.name == p.name) save.blocks.emplace_back(t.name, t.local);
  save.plan = std::move(planned);
  return save;
}

void write_pending(PendingSave& save) noexcept {
  // Any exception is this rank's failure to write: it must reach finish_save's collective, so
  // that every rank throws it, rather than end a background thread.
  try {
    fault_point("save");
    save.file = write_rank_file(save.rank_path, save.blocks);
    save.write_error = nullptr;
  } catch (const std::exception& e) {
    save.write_error = failure_json(failure_of(e));
  }
}

SaveReport finish_save(PendingSave& save) {
  comm::RankContext* ctx = comm::current_rank_or_null();
  const int rank = ctx ? ctx->rank() : 0;
  // Phase 2's report: this rank's blocks, once its file is on disk.
  json done{{"error", save.write_error}, {"bytes", save.file.bytes}, {"state", save.options.rank_state},
            {"blocks", json::array()}};
  for (const WrittenBlock& b : save.file.blocks)
    done["blocks"].push_back({{"name", b.name}, {"offset", b.offset}, {"bytes", b.bytes}, {"crc32", b.crc32}});
  const std::vector<json> written = gather_json(done);
  throw_first_failure(written, save.what + ": save failed, not committed");
  SaveReport report = save.report;
  report.bytes_written = save.file.bytes;

  // Phase 3: rank 0 commits; every rank learns whether it did.
  std::optional<Failure> failed = capture([&] {
    if (rank == 0) report.removed = commit(save.dir, report.step_dir, save.plan->tensors, written, save.options);
  });
  throw_first_failure(gather_json(json{{"error", failure_json(failed)}}), save.what + ": commit failed");
  return report;
}

}  // namespace detail

SaveReport save_checkpoint_dir(const std::string& dir, const std::vector<ShardedTensor>& tensors,
                               const SaveOptions& options) {
  detail::PendingSave save = detail::begin_save(dir, tensors, options);
  detail::write_pending(save);
  return detail::finish_save(save);
}

}  // namespace sf::ckpt
