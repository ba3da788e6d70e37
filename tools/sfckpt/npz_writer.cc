#include "tools/sfckpt/npz_writer.h"

#include <zlib.h>

#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include <shardflow/core/error.h>

namespace sf::sfckpt {
namespace {

void put16(std::string& s, uint32_t v) {
  s.push_back(static_cast<char>(v & 0xff));
  s.push_back(static_cast<char>((v >> 8) & 0xff));
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}

// NumPy's tuple spelling: "()", "(4,)", "(4, 6)".
std::string shape_tuple(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

constexpr uint32_t kZipMax = std::numeric_limits<uint32_t>::max();
// 1980-01-01 00:00 in DOS date and time: the members carry no meaningful time.
constexpr uint32_t kDosDate = (0 << 9) | (1 << 5) | 1;

}  // namespace

std::string npy_bytes(const Tensor& t) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   t.dtype() == DType::kF32 ? "<f4" : "<i4", shape_tuple(t.shape()));
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64 and
  // ended by a newline, as numpy writes it (the data then starts aligned).
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  put16(out, static_cast<uint32_t>(header.size()));
  out += header;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

NpzWriter::NpzWriter(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw IoError(fmt::format("cannot create '{}'", tmp_));
}

NpzWriter::~NpzWriter() {
  if (finished_) return;
  out_.close();
  std::error_code ignored;  // a destructor must not throw; the export's error is already on its way
  std::filesystem::remove(tmp_, ignored);
}

void NpzWriter::write(const std::string& bytes) {
  out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out_) throw IoError(fmt::format("cannot write '{}'", tmp_));
  written_ += bytes.size();
}

void NpzWriter::add(const std::string& name, const Tensor& t) {
  const std::string member = name + ".npy";
  const std::string data = npy_bytes(t);
  if (data.size() >= kZipMax || written_ + data.size() + member.size() + 30 >= kZipMax)
    throw IoError(fmt::format("'{}': tensor '{}' would take the archive past 4 GiB, which .npz without zip64 cannot hold",
                              path_, name));
  Member m{member, static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(data.data()),
                                               static_cast<uInt>(data.size()))),
           static_cast<uint32_t>(data.size()), static_cast<uint32_t>(written_)};
  std::string head;
  put32(head, 0x04034b50);  // local file header
  put16(head, 20);          // version needed: 2.0
  put16(head, 0);           // flags
  put16(head, 0);           // method: stored
  put16(head, 0);           // time
  put16(head, kDosDate);    // date
  put32(head, m.crc);
  put32(head, m.size);      // compressed size
  put32(head, m.size);      // uncompressed size
  put16(head, static_cast<uint32_t>(member.size()));
  put16(head, 0);           // extra field length
  head += member;
  write(head);
  write(data);
  members_.push_back(std::move(m));
}

void NpzWriter::finish() {
  const auto dir_offset = static_cast<uint32_t>(written_);
  std::string dir;
  for (const Member& m : members_) {
    put32(dir, 0x02014b50);  // central directory header
    put16(dir, 20);          // version made by
    put16(dir, 20);          // version needed
    put16(dir, 0);
    put16(dir, 0);
    put16(dir, 0);
    put16(dir, kDosDate);
    put32(dir, m.crc);
    put32(dir, m.size);
    put32(dir, m.size);
    put16(dir, static_cast<uint32_t>(m.name.size()));
    put16(dir, 0);  // extra
    put16(dir, 0);  // comment
    put16(dir, 0);  // disk number
    put16(dir, 0);  // internal attributes
    put32(dir, 0);  // external attributes
    put32(dir, m.offset);
    dir += m.name;
  }
  if (members_.size() > 0xffff || written_ + dir.size() + 22 >= kZipMax)
    throw IoError(fmt::format("'{}': too many tensors or bytes for .npz without zip64", path_));
  std::string end;
  put32(end, 0x06054b50);  // end of central directory
  put16(end, 0);
  put16(end, 0);
  put16(end, static_cast<uint32_t>(members_.size()));
  put16(end, static_cast<uint32_t>(members_.size()));
  put32(end, static_cast<uint32_t>(dir.size()));
  put32(end, dir_offset);
  put16(end, 0);  // comment length
  write(dir);
  write(end);
  out_.close();
  if (!out_) throw IoError(fmt::format("cannot write '{}'", tmp_));
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) throw IoError(fmt::format("cannot rename '{}' to '{}': {}", tmp_, path_, ec.message()));
  finished_ = true;
}

}  // namespace sf::sfckpt
