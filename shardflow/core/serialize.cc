// Implements the grammar of docs/tensor_format.md.
#include <shardflow/core/serialize.h>

#include <msgpack.hpp>

#include <cstring>

#include <shardflow/core/brief.h>

namespace sf {

TensorHeader header_of(const Tensor& t) { return {kTensorFormatVersion, t.dtype(), t.shape(), t.nbytes()}; }

std::string encode_header(const Tensor& t) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(4);
  pk.pack(std::string("v"));
  pk.pack(kTensorFormatVersion);
  pk.pack(std::string("dtype"));
  pk.pack(std::string(dtype_name(t.dtype())));
  pk.pack(std::string("shape"));
  pk.pack(t.shape());
  pk.pack(std::string("nbytes"));
  pk.pack(static_cast<uint64_t>(t.nbytes()));
  return std::string(buf.data(), buf.size());
}

TensorHeader decode_header(const void* data, size_t size, size_t* consumed) {
  TensorHeader h;
  size_t off = 0;
  msgpack::object_handle oh;
  try {
    // Limits keep a corrupt header from making msgpack allocate for billions of entries.
    const msgpack::unpack_limit limit(/*array=*/64, /*map=*/16, /*str=*/64, /*bin=*/0, /*ext=*/0, /*depth=*/3);
    oh = msgpack::unpack(static_cast<const char*>(data), size, off, nullptr, nullptr, limit);
  } catch (const std::exception& e) {
    SF_THROW(IoError, "tensor header: not valid msgpack ({})", e.what());
  }
  const msgpack::object& o = oh.get();
  SF_ENFORCE(o.type == msgpack::type::MAP, IoError, "tensor header: expected a map");
  bool have_v = false, have_dtype = false, have_shape = false, have_nbytes = false;
  try {
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const auto& kv = o.via.map.ptr[i];
      auto key = kv.key.as<std::string>();
      if (key == "v") {
        h.version = kv.val.as<uint32_t>();
        have_v = true;
      } else if (key == "dtype") {
        auto s = kv.val.as<std::string>();
        SF_ENFORCE(s == "f32" || s == "i32", IoError, "tensor header: unknown dtype '{}'", s);
        h.dtype = s == "f32" ? DType::kF32 : DType::kI32;
        have_dtype = true;
      } else if (key == "shape") {
        h.shape = kv.val.as<Shape>();
        have_shape = true;
      } else if (key == "nbytes") {
        h.nbytes = kv.val.as<uint64_t>();
        have_nbytes = true;
      }  // unknown keys are ignored: newer writers may add fields
    }
  } catch (const msgpack::type_error&) {
    SF_THROW(IoError, "tensor header: a field has the wrong msgpack type");
  }
  SF_ENFORCE(have_v && have_dtype && have_shape && have_nbytes, IoError,
             "tensor header: missing one of v, dtype, shape, nbytes");
  SF_ENFORCE(h.version == kTensorFormatVersion, IoError, "tensor header: version {} (this build reads {})", h.version,
             kTensorFormatVersion);
  uint64_t elements = 1;
  for (int64_t d : h.shape) {
    SF_ENFORCE(d >= 0, IoError, "tensor header: negative dim in shape {}", brief_shape(h.shape));
    SF_ENFORCE(!__builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements) &&
                   elements <= kMaxTensorBytes,
               IoError, "tensor header: shape {} exceeds the size limit", brief_shape(h.shape));
  }
  SF_ENFORCE(h.nbytes <= kMaxTensorBytes, IoError, "tensor header: {} bytes exceeds the limit", h.nbytes);
  SF_ENFORCE(h.nbytes == elements * dtype_size(h.dtype), IoError,
             "tensor header: nbytes {} does not match {}{}", h.nbytes, dtype_name(h.dtype), brief_shape(h.shape));
  *consumed = off;
  return h;
}

std::string serialize(const Tensor& t) {
  std::string out = encode_header(t);
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

Tensor deserialize(const void* data, size_t size, size_t* consumed) {
  size_t hlen = 0;
  TensorHeader h = decode_header(data, size, &hlen);
  SF_ENFORCE(size - hlen >= h.nbytes, IoError, "tensor payload truncated: {} of {} bytes", size - hlen, h.nbytes);
  Tensor t(h.shape, h.dtype);
  if (h.nbytes) std::memcpy(t.raw(), static_cast<const char*>(data) + hlen, h.nbytes);
  if (consumed) *consumed = hlen + h.nbytes;
  return t;
}

}  // namespace sf
