// Header: the small fixed-layout record that opens every mpi message (docs/mpi_transport.md).
// It carries what MPI's own envelope cannot: the full 64-bit transport Tag (MPI tags stop at
// MPI_TAG_UB, often 2^23 or less, so the fabric matches tags in its own queues, like the
// inproc fabric), the dtype and shape of the tensor whose raw bytes follow as the payload, and
// the message kind (data, or the notice that the sender closed its endpoint).
//
// Layout (host byte order; MPI jobs here are homogeneous):
//   u32 magic 'SFMP' | u8 version | u8 kind | u8 dtype | u8 ndim | u64 tag | i64 dims[ndim]
//
// Threading: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <shardflow/comm/transport.h>
#include <shardflow/core/dtype.h>
#include <shardflow/core/shape.h>

namespace sf::comm::mpi {

enum class MessageKind : uint8_t { kData = 0, kClose = 1 };

struct MessageHeader {
  MessageKind kind = MessageKind::kData;
  Tag tag = 0;
  DType dtype = DType::kF32;
  Shape shape;

  // Elements and payload bytes of the tensor this header announces (0 for kClose).
  int64_t numel() const;
  size_t payload_bytes() const;
  bool operator==(const MessageHeader&) const = default;
};

inline constexpr uint32_t kHeaderMagic = 0x504D4653;  // "SFMP" read as little-endian bytes
inline constexpr uint8_t kHeaderVersion = 1;
inline constexpr size_t kHeaderFixedBytes = 16;
inline constexpr int kMaxDims = 16;

std::vector<uint8_t> encode_header(const MessageHeader& h);
// Throws IoError naming what is wrong (size, magic, version, kind, dtype, ndim, a negative
// or overflowing dimension); never reads past `n` bytes.
MessageHeader decode_header(const uint8_t* bytes, size_t n);

}  // namespace sf::comm::mpi
