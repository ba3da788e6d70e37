#include <shardflow/train/checkpoint/rank_file.h>

#include <zlib.h>

#include <algorithm>

#include <shardflow/train/checkpoint/durable_file.h>

namespace sf::ckpt {

uint32_t crc32_of(const void* data, int64_t bytes, uint32_t crc) {
  // zlib's crc32 takes uInt lengths: feed it in pieces below 4 GiB.
  const auto* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (bytes > 0) {
    const int64_t n = std::min<int64_t>(bytes, int64_t{1} << 30);
    c = ::crc32(c, p, static_cast<uInt>(n));
    p += n;
    bytes -= n;
  }
  return static_cast<uint32_t>(c);
}

WrittenFile write_rank_file(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& blocks) {
  WrittenFile out;
  DurableWriter w(path);
  for (const auto& [name, t] : blocks) {
    w.pad_to(kBlockAlignment);
    WrittenBlock b;
    b.name = name;
    b.offset = w.size();
    b.bytes = static_cast<int64_t>(t.nbytes());
    b.crc32 = crc32_of(t.raw(), b.bytes);
    w.write(t.raw(), b.bytes);
    out.blocks.push_back(std::move(b));
  }
  out.bytes = w.size();
  w.sync();
  return out;
}

}  // namespace sf::ckpt
