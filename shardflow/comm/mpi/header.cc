#include <shardflow/comm/mpi/header.h>

#include <cstring>
#include <limits>

#include <shardflow/core/error.h>

namespace sf::comm::mpi {

int64_t MessageHeader::numel() const {
  if (kind != MessageKind::kData) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t MessageHeader::payload_bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }

std::vector<uint8_t> encode_header(const MessageHeader& h) {
  SF_ENFORCE(h.shape.size() <= static_cast<size_t>(kMaxDims), InvalidArgument,
             "mpi: a tensor of rank {} exceeds the wire format's {} dimensions", h.shape.size(), kMaxDims);
  std::vector<uint8_t> out(kHeaderFixedBytes + 8 * h.shape.size());
  const uint8_t fields[4] = {kHeaderVersion, static_cast<uint8_t>(h.kind), static_cast<uint8_t>(h.dtype),
                             static_cast<uint8_t>(h.shape.size())};
  std::memcpy(out.data(), &kHeaderMagic, 4);
  std::memcpy(out.data() + 4, fields, 4);
  std::memcpy(out.data() + 8, &h.tag, 8);
  if (!h.shape.empty()) std::memcpy(out.data() + kHeaderFixedBytes, h.shape.data(), 8 * h.shape.size());
  return out;
}

MessageHeader decode_header(const uint8_t* bytes, size_t n) {
  SF_ENFORCE(n >= kHeaderFixedBytes, IoError, "mpi: header of {} bytes is shorter than {}", n, kHeaderFixedBytes);
  uint32_t magic = 0;
  std::memcpy(&magic, bytes, 4);
  SF_ENFORCE(magic == kHeaderMagic, IoError, "mpi: header magic {:#x} is not {:#x}", magic, kHeaderMagic);
  const uint8_t version = bytes[4], kind = bytes[5], dtype = bytes[6], ndim = bytes[7];
  SF_ENFORCE(version == kHeaderVersion, IoError, "mpi: header version {} is not {}", version, kHeaderVersion);
  SF_ENFORCE(kind <= static_cast<uint8_t>(MessageKind::kClose), IoError, "mpi: unknown message kind {}", kind);
  SF_ENFORCE(dtype <= static_cast<uint8_t>(DType::kI32), IoError, "mpi: unknown dtype code {}", dtype);
  SF_ENFORCE(ndim <= kMaxDims, IoError, "mpi: header claims {} dimensions (at most {})", ndim, kMaxDims);
  SF_ENFORCE(n == kHeaderFixedBytes + 8u * ndim, IoError, "mpi: header of {} bytes does not hold {} dimensions", n,
             ndim);
  MessageHeader h;
  h.kind = static_cast<MessageKind>(kind);
  h.dtype = static_cast<DType>(dtype);
  std::memcpy(&h.tag, bytes + 8, 8);
  h.shape.resize(ndim);
  if (ndim > 0) std::memcpy(h.shape.data(), bytes + kHeaderFixedBytes, 8u * ndim);
  int64_t numel = 1;
  for (int64_t d : h.shape) {
    SF_ENFORCE(d >= 0, IoError, "mpi: header has a negative dimension {}", d);
    SF_ENFORCE(d == 0 || numel <= std::numeric_limits<int64_t>::max() / 4 / d, IoError,
               "mpi: header shape overflows the element count");
    numel *= d;
  }
  return h;
}

}  // namespace sf::comm::mpi
