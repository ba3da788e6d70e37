// Implements the version-2 manifest of docs/checkpoint_format.md.
#include <shardflow/train/checkpoint/manifest.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::ckpt {

namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;  // written keys keep the grammar's order
constexpr const char* kFormat = "shardflow-checkpoint";

// A rule broken inside the manifest: one exception type, turned into the one-line message
// naming the file by parse_manifest.
struct Malformed {
  std::string rule;
};

[[noreturn]] void malformed(std::string rule) { throw Malformed{std::move(rule)}; }

const json& field(const json& obj, const char* key, const std::string& in) {
  if (!obj.is_object()) malformed(fmt::format("{} is not an object", in));
  auto it = obj.find(key);
  if (it == obj.end()) malformed(fmt::format("{} has no '{}'", in, key));
  return *it;
}

int64_t integer(const json& obj, const char* key, const std::string& in, int64_t lo, int64_t hi) {
  const json& v = field(obj, key, in);
  if (!v.is_number_integer()) malformed(fmt::format("{}'s '{}' is not an integer", in, key));
  const auto x = v.get<int64_t>();
  if (x < lo || x > hi) malformed(fmt::format("{}'s '{}' is {}, outside [{}, {}]", in, key, x, lo, hi));
  return x;
}

std::string text(const json& obj, const char* key, const std::string& in) {
  const json& v = field(obj, key, in);
  if (!v.is_string()) malformed(fmt::format("{}'s '{}' is not a string", in, key));
  return v.get<std::string>();
}

std::vector<int64_t> integers(const json& v, const std::string& in, int64_t lo) {
  if (!v.is_array()) malformed(fmt::format("{} is not an array", in));
  std::vector<int64_t> out;
  for (const json& x : v) {
    if (!x.is_number_integer() || x.get<int64_t>() < lo)
      malformed(fmt::format("{} holds {}, not an integer >= {}", in, brief_text(x.dump(), 40), lo));
    out.push_back(x.get<int64_t>());
  }
  return out;
}

ordered layout_json(const TensorLayout& l) {
  ordered j;
  j["device_matrix"] = l.mesh().dims();
  j["tensor_map"] = l.tensor_map();
  if (!l.axis_names().empty()) j["axis_names"] = l.axis_names();
  return j;
}

TensorLayout parse_layout(const json& j, const std::string& in) {
  const std::vector<int64_t> dims = integers(field(j, "device_matrix", in), in + "'s device_matrix", 1);
  const json& map_json = field(j, "tensor_map", in);
  if (!map_json.is_array()) malformed(in + "'s tensor_map is not an array");
  TensorLayout::TensorMap map;
  for (const json& axes : map_json) {
    std::vector<int> dim_axes;
    for (int64_t a : integers(axes, in + "'s tensor_map", 0)) dim_axes.push_back(static_cast<int>(std::min<int64_t>(a, 1 << 20)));
    map.push_back(std::move(dim_axes));
  }
  std::vector<std::string> names;
  if (auto it = j.find("axis_names"); it != j.end()) {
    if (!it->is_array()) malformed(in + "'s axis_names is not an array");
    for (const json& n : *it) {
      if (!n.is_string()) malformed(in + "'s axis_names holds a non-string");
      names.push_back(n.get<std::string>());
    }
  }
  try {
    return TensorLayout(DeviceMatrix(dims), std::move(map), {}, std::move(names));
  } catch (const Error& e) {
    malformed(fmt::format("{}: {}", in, e.what()));
  }
}

DType parse_dtype(const std::string& s, const std::string& in) {
  if (s == "f32") return DType::kF32;
  if (s == "i32") return DType::kI32;
  malformed(fmt::format("{}'s dtype '{}' is neither f32 nor i32", in, brief_text(s, 20)));
}

}  // namespace

std::string rank_file_name(int rank) { return fmt::format("rank_{}.data", rank); }

const TensorEntry* Manifest::find(const std::string& name) const {
  for (const TensorEntry& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string manifest_json(const Manifest& m) {
  ordered j;
  j["format"] = kFormat;
  j["version"] = m.version;
  j["step"] = m.step;
  j["world_size"] = m.world_size;
  j["parallel_mode"] = m.parallel_mode;
  j["state"] = m.state;
  ordered ranks = ordered::array();
  for (const RankEntry& r : m.ranks) {
    ordered e;
    e["rank"] = r.rank;
    e["file"] = r.file;
    e["bytes"] = r.bytes;
    e["state"] = r.state;
    ranks.push_back(std::move(e));
  }
  j["ranks"] = std::move(ranks);
  ordered tensors = ordered::array();
  for (const TensorEntry& t : m.tensors) {
    ordered e;
    e["name"] = t.name;
    e["shape"] = t.shape;
    e["dtype"] = std::string(dtype_name(t.dtype));
    e["layout"] = layout_json(t.layout);
    ordered blocks = ordered::array();
    for (const BlockEntry& b : t.blocks) {
      ordered be;
      be["ranks"] = b.ranks;
      be["file"] = b.file;
      be["offset"] = b.offset;
      be["bytes"] = b.bytes;
      be["crc32"] = b.crc32;
      blocks.push_back(std::move(be));
    }
    e["blocks"] = std::move(blocks);
    tensors.push_back(std::move(e));
  }
  j["tensors"] = std::move(tensors);
  // One line per key, and per rank and tensor: readable, and diffs line up with tensors.
  std::string out = "{";
  const char* sep = "\n";
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += sep + ordered(it.key()).dump() + ": ";
    sep = ",\n";
    if (!it->is_array() || it->empty()) {
      out += it->dump();
      continue;
    }
    out += "[";
    const char* item = "\n  ";
    for (const ordered& e : *it) {
      out += item + e.dump();
      item = ",\n  ";
    }
    out += "\n]";
  }
  return out + "\n}\n";
}

Manifest parse_manifest(const std::string& source, const std::string& where) {
  Manifest m;
  try {
    const json j = json::parse(source);
    if (!j.is_object() || !j.contains("format") || j["format"] != kFormat)
      malformed("it is not a shardflow checkpoint manifest (no \"format\": \"shardflow-checkpoint\")");
    const json& v = field(j, "version", "the manifest");
    SF_ENFORCE(v.is_number_integer() && v.get<int64_t>() == kManifestVersion, IoError,
               "{} is format version {}; this build reads version {}", where, brief_text(v.dump(), 20),
               kManifestVersion);
    m.step = integer(j, "step", "the manifest", 0, INT64_MAX);
    m.world_size = static_cast<int>(integer(j, "world_size", "the manifest", 1, kMaxDevices));
    m.parallel_mode = text(j, "parallel_mode", "the manifest");
    m.state = field(j, "state", "the manifest");

    const json& ranks = field(j, "ranks", "the manifest");
    if (!ranks.is_array() || ranks.size() != static_cast<size_t>(m.world_size))
      malformed(fmt::format("'ranks' must list the {} ranks of world_size", m.world_size));
    std::map<std::string, int64_t> file_bytes;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const std::string in = fmt::format("ranks[{}]", r);
      RankEntry e;
      e.rank = static_cast<int>(integer(ranks[r], "rank", in, static_cast<int64_t>(r), static_cast<int64_t>(r)));
      e.file = text(ranks[r], "file", in);
      if (e.file != rank_file_name(e.rank)) malformed(fmt::format("{}'s file must be '{}'", in, rank_file_name(e.rank)));
      e.bytes = integer(ranks[r], "bytes", in, 0, INT64_MAX);
      e.state = field(ranks[r], "state", in);
      file_bytes[e.file] = e.bytes;
      m.ranks.push_back(std::move(e));
    }

    const json& tensors = field(j, "tensors", "the manifest");
    if (!tensors.is_array()) malformed("'tensors' is not an array");
    std::set<std::string> seen;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const json& tj = tensors[i];
      TensorEntry t;
      t.name = text(tj, "name", fmt::format("tensors[{}]", i));
      const std::string in = fmt::format("tensor '{}'", brief_text(t.name, 60));
      if (!seen.insert(t.name).second) malformed(in + " is listed twice");
      t.shape = integers(field(tj, "shape", in), in + "'s shape", 0);
      t.dtype = parse_dtype(text(tj, "dtype", in), in);
      t.layout = parse_layout(field(tj, "layout", in), in + "'s layout");
      try {
        t.layout.check(t.shape, in);
      } catch (const Error& e) {
        malformed(e.what());
      }
      const int64_t holders = t.layout.mesh().device_count();
      const int64_t block_bytes = numel(t.layout.local_shape(t.shape)) * static_cast<int64_t>(dtype_size(t.dtype));
      std::vector<int> covered(static_cast<size_t>(holders), 0);
      const json& blocks = field(tj, "blocks", in);
      if (!blocks.is_array()) malformed(in + "'s blocks is not an array");
      for (size_t b = 0; b < blocks.size(); ++b) {
        const std::string bin = fmt::format("{} block {}", in, b);
        BlockEntry e;
        for (int64_t r : integers(field(blocks[b], "ranks", bin), bin + "'s ranks", 0)) {
          if (r >= holders) malformed(fmt::format("{} names layout rank {} of a {}-device layout", bin, r, holders));
          if (covered[static_cast<size_t>(r)]++) malformed(fmt::format("{} names layout rank {} twice", in, r));
          e.ranks.push_back(static_cast<int>(r));
        }
        if (e.ranks.empty()) malformed(bin + " names no rank");
        e.file = text(blocks[b], "file", bin);
        auto f = file_bytes.find(e.file);
        if (f == file_bytes.end()) malformed(fmt::format("{} is in '{}', no rank's file", bin, brief_text(e.file, 60)));
        e.offset = integer(blocks[b], "offset", bin, 0, INT64_MAX);
        e.bytes = integer(blocks[b], "bytes", bin, block_bytes, block_bytes);
        if (e.offset > f->second - e.bytes)
          malformed(fmt::format("{} ends past '{}' ({} bytes)", bin, e.file, f->second));
        e.crc32 = static_cast<uint32_t>(integer(blocks[b], "crc32", bin, 0, UINT32_MAX));
        t.blocks.push_back(std::move(e));
      }
      for (int64_t r = 0; r < holders; ++r)
        if (!covered[static_cast<size_t>(r)]) malformed(fmt::format("{} has no block for layout rank {}", in, r));
      m.tensors.push_back(std::move(t));
    }
  } catch (const Malformed& e) {
    SF_THROW(IoError, "{} is malformed: {}", where, e.rule);
  } catch (const IoError&) {
    throw;
  } catch (const Error& e) {  // a shape whose size overflows, from the shape arithmetic
    SF_THROW(IoError, "{} is malformed: {}", where, e.what());
  } catch (const json::exception& e) {
    // The parser's message quotes the bytes it stopped at: escaped and cut, never dumped.
    SF_THROW(IoError, "{} is malformed: {}", where, brief_text(e.what(), 200));
  }
  return m;
}

}  // namespace sf::ckpt
