// Implements docs/checkpoint_format.md.
#include <shardflow/train/checkpoint.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <msgpack.hpp>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/serialize.h>

namespace sf {

namespace {
constexpr const char* kFormat = "shardflow-checkpoint";
constexpr uint32_t kVersion = 1;
}  // namespace

void save_checkpoint(const NamedTensors& entries, const std::string& path) {
  msgpack::sbuffer head;
  msgpack::packer<msgpack::sbuffer> pk(head);
  pk.pack_map(3);
  pk.pack(std::string("format"));
  pk.pack(std::string(kFormat));
  pk.pack(std::string("v"));
  pk.pack(kVersion);
  pk.pack(std::string("count"));
  pk.pack(static_cast<uint64_t>(entries.size()));
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    SF_ENFORCE(f.good(), IoError, "cannot write checkpoint '{}'", tmp);
    f.write(head.data(), static_cast<std::streamsize>(head.size()));
    for (const auto& [name, t] : entries) {
      msgpack::sbuffer nb;
      msgpack::pack(nb, name);
      f.write(nb.data(), static_cast<std::streamsize>(nb.size()));
      std::string rec = serialize(t);
      f.write(rec.data(), static_cast<std::streamsize>(rec.size()));
    }
    f.flush();
    SF_ENFORCE(f.good(), IoError, "writing checkpoint '{}' failed", tmp);
  }
  int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  SF_ENFORCE(std::rename(tmp.c_str(), path.c_str()) == 0, IoError, "cannot rename '{}' to '{}'", tmp, path);
}

NamedTensors load_checkpoint(const std::string& path) {
  std::error_code ec;
  SF_ENFORCE(std::filesystem::is_regular_file(path, ec), IoError, "cannot open checkpoint '{}': not a regular file",
             path);
  // The size is checked before a byte is read (a sparse file can claim terabytes), and the
  // buffer holds the file's stated size at most: one that grows meanwhile is cut, then refused.
  const uintmax_t size = std::filesystem::file_size(path, ec);
  SF_ENFORCE(!ec && size <= kMaxCheckpointBytes, IoError, "checkpoint '{}': {} bytes, more than the {} allowed", path,
             ec ? 0 : size, kMaxCheckpointBytes);
  std::ifstream f(path, std::ios::binary);
  SF_ENFORCE(f.good(), IoError, "cannot open checkpoint '{}'", path);
  std::string bytes(static_cast<size_t>(size), '\0');
  f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  SF_ENFORCE(!f.bad(), IoError, "reading checkpoint '{}' failed", path);
  bytes.resize(static_cast<size_t>(f.gcount()));
  size_t off = 0;
  uint64_t count = 0;
  NamedTensors out;
  try {
    const msgpack::unpack_limit limit(/*array=*/16, /*map=*/16, /*str=*/4096, /*bin=*/0, /*ext=*/0, /*depth=*/3);
    auto oh = msgpack::unpack(bytes.data(), bytes.size(), off, nullptr, nullptr, limit);
    auto head = oh.get().as<std::map<std::string, msgpack::object>>();
    SF_ENFORCE(head.count("format") && head["format"].as<std::string>() == kFormat, IoError,
               "'{}' is not a shardflow checkpoint", path);
    SF_ENFORCE(head.count("v") && head["v"].as<uint32_t>() == kVersion, IoError,
               "checkpoint '{}': unsupported version", path);
    count = head.at("count").as<uint64_t>();
    // Every entry takes more than one byte: a count the file cannot hold is refused up front.
    SF_ENFORCE(count <= bytes.size(), IoError, "checkpoint '{}': header declares {} entries in a file of {} bytes",
               path, count, bytes.size());
    for (uint64_t i = 0; i < count; ++i) {
      auto name = msgpack::unpack(bytes.data(), bytes.size(), off, nullptr, nullptr, limit).get().as<std::string>();
      size_t used = 0;
      Tensor t;
      try {
        // deserialize refuses a header over kMaxTensorBytes or past the file's end before
        // allocating; the message gains the tensor's name and place.
        t = deserialize(bytes.data() + off, bytes.size() - off, &used);
      } catch (const IoError& e) {
        SF_THROW(IoError, "checkpoint '{}': tensor '{}' (entry {} of {}, byte {}): {}", path, brief_text(name, 80), i,
                 count, off, e.what());
      }
      off += used;
      out.emplace_back(std::move(name), std::move(t));
    }
  } catch (const IoError& e) {
    if (std::string_view(e.what()).rfind("checkpoint '", 0) == 0) throw;
    SF_THROW(IoError, "checkpoint '{}': {}", path, e.what());
  } catch (const std::exception& e) {
    SF_THROW(IoError, "checkpoint '{}' is truncated or malformed ({} of {} entries read: {})", path, out.size(),
             count, e.what());
  }
  return out;
}

NamedTensors checkpoint_entries(nn::Optimizer& optimizer) {
  NamedTensors out;
  for (const auto& p : optimizer.parameters()) out.emplace_back(p.name(), p.value());
  for (auto& s : optimizer.state()) out.push_back(std::move(s));
  out.emplace_back("global_step", Tensor::from_vector({}, std::vector<int32_t>{
                                                              static_cast<int32_t>(optimizer.global_step())}));
  return out;
}

std::string brief_contents(const NamedTensors& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  return fmt::format("{} tensor{}{}{}", tensors.size(), tensors.size() == 1 ? "" : "s", names.empty() ? "" : ": ",
                     brief_names(names, 6));
}

void load_into(nn::Optimizer& optimizer, const NamedTensors& loaded, const std::string& source) {
  auto find = [&](const std::string& name) -> const Tensor* {
    for (const auto& [n, t] : loaded)
      if (n == name) return &t;
    return nullptr;
  };
  // Every destination is checked before the first is written: a refused load changes nothing.
  std::vector<std::pair<const Tensor*, Tensor>> copies;
  auto check = [&](const std::string& name, const Tensor& dst) {
    const Tensor* src = find(name);
    SF_ENFORCE(src != nullptr, InvalidArgument, "{} has no tensor '{}' (it holds {})", source, brief_text(name, 80),
               brief_contents(loaded));
    SF_ENFORCE(src->shape() == dst.shape() && src->dtype() == dst.dtype(), ShapeError,
               "{}: tensor '{}' is {}, the network's is {}", source, brief_text(name, 80), src->describe(),
               dst.describe());
    copies.emplace_back(src, dst);
  };
  for (const auto& p : optimizer.parameters()) check(p.name(), p.value());
  for (auto& [name, t] : optimizer.state()) check(name, t);
  for (auto& [src, dst] : copies) dst.copy_from(*src);
  if (const Tensor* s = find("global_step")) optimizer.set_global_step(s->i32()[0]);
}

void load_into(nn::Optimizer& optimizer, const std::string& ckpt_path) {
  load_into(optimizer, load_checkpoint(ckpt_path), fmt::format("checkpoint '{}'", brief_text(ckpt_path)));
}

}  // namespace sf
