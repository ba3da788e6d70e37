/// @file
/// msgpack encoding of tensors: a small header map followed by the raw element bytes.
/// The grammar is in docs/tensor_format.md; transports send the two parts as two frames,
/// files store them back to back. Decoding validates every field and refuses with IoError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <shardflow/core/tensor.h>

namespace sf {

/// The header map that precedes a tensor's element bytes (docs/tensor_format.md).
struct TensorHeader {
  uint32_t version = 1;       ///< the format version, kTensorFormatVersion
  DType dtype = DType::kF32;  ///< the element type
  Shape shape;                ///< the tensor's shape
  uint64_t nbytes = 0;        ///< the payload's length in bytes
};

/// The tensor format version this build writes and reads.
constexpr uint32_t kTensorFormatVersion = 1;
/// Largest payload a decoder accepts (4 GiB), so a corrupt header cannot ask for more.
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 32;

/// The header describing `t`.
TensorHeader header_of(const Tensor& t);
/// The header as msgpack bytes.
std::string encode_header(const Tensor& t);
/// Parses a header at data[0..size); sets *consumed to its length in bytes.
TensorHeader decode_header(const void* data, size_t size, size_t* consumed);

/// Header and payload back to back in one buffer.
std::string serialize(const Tensor& t);
/// Inverse of serialize; *consumed (if given) receives the number of bytes read.
Tensor deserialize(const void* data, size_t size, size_t* consumed = nullptr);

}  // namespace sf
