// Implements the header grammar of docs/zmq_transport.md.
#include <shardflow/comm/zmq/header.h>

#include <msgpack.hpp>

#include <string_view>

#include <shardflow/core/brief.h>

namespace sf::comm::zmq {

namespace {

[[noreturn]] void refuse(Defect d, const std::string& why, const char* where) {
  throw MalformedFrame(d, "zmq header: " + why, where);
}

#define SF_ZMQ_REFUSE(defect, ...) refuse(defect, fmt::format(__VA_ARGS__), SF_WHERE)

size_t auth_bytes(Kind k) {
  switch (k) {
    case Kind::kHello: return kNonceBytes;
    case Kind::kChallenge: return kNonceBytes + kProofBytes;
    case Kind::kProof: return kProofBytes;
    case Kind::kLane: return kLaneOfferBytes;
    default: return 0;
  }
}

bool has_tensor(Kind k) { return k == Kind::kData; }

// Fields present in a decoded map, one bit each.
enum Field : unsigned { kV = 1, kKind = 2, kFrom = 4, kTag = 8, kDtype = 16, kShape = 32, kNbytes = 64,
                        kSize = 128, kAuth = 256, kEps = 512 };

unsigned required(Kind k) {
  switch (k) {
    case Kind::kData: return kTag | kDtype | kShape | kNbytes;
    case Kind::kLane: return kAuth | kEps;
    case Kind::kHello:
    case Kind::kChallenge:
    case Kind::kProof: return kAuth;
    case Kind::kJoin: return kSize | kEps;
    case Kind::kTable: return kEps;
    case Kind::kClose: return 0;
  }
  return 0;
}

}  // namespace

std::string_view kind_name(Kind k) {
  static const char* kNames[] = {"data", "close", "lane", "hello", "challenge", "proof", "join", "table"};
  return static_cast<uint8_t>(k) <= kLastKind ? kNames[static_cast<int>(k)] : "unknown";
}

std::vector<uint8_t> encode_header(const Header& h) {
  const unsigned fields = required(h.kind);
  uint32_t n = 3;
  for (unsigned f = kTag; f <= kEps; f <<= 1) n += (fields & f) ? 1 : 0;
  msgpack::sbuffer buf(64);
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(n);
  pk.pack(std::string_view("v"));
  pk.pack(kWireVersion);
  pk.pack(std::string_view("kind"));
  pk.pack(static_cast<uint32_t>(h.kind));
  pk.pack(std::string_view("from"));
  pk.pack(h.from);
  if (fields & kTag) {
    pk.pack(std::string_view("tag"));
    pk.pack(static_cast<uint64_t>(h.tag));
  }
  if (fields & kDtype) {
    pk.pack(std::string_view("dtype"));
    pk.pack(dtype_name(h.dtype));
  }
  if (fields & kShape) {
    pk.pack(std::string_view("shape"));
    pk.pack(h.shape);
  }
  if (fields & kNbytes) {
    pk.pack(std::string_view("nbytes"));
    pk.pack(h.nbytes);
  }
  if (fields & kSize) {
    pk.pack(std::string_view("size"));
    pk.pack(h.size);
  }
  if (fields & kAuth) {
    pk.pack(std::string_view("auth"));
    pk.pack_bin(static_cast<uint32_t>(h.auth.size()));
    pk.pack_bin_body(reinterpret_cast<const char*>(h.auth.data()), static_cast<uint32_t>(h.auth.size()));
  }
  if (fields & kEps) {
    pk.pack(std::string_view("eps"));
    pk.pack(h.endpoints);
  }
  const auto* p = reinterpret_cast<const uint8_t*>(buf.data());
  return std::vector<uint8_t>(p, p + buf.size());
}

Header decode_header(const uint8_t* bytes, size_t n, const HeaderLimits& limits) {
  msgpack::object_handle oh;
  size_t off = 0;
  try {
    // Limits keep a hostile header from making msgpack allocate much: at most one endpoint
    // per rank, short strings, auth fields of 64 bytes.
    const size_t max_array = std::max<size_t>(kMaxDims + 1, static_cast<size_t>(limits.world_size) + 1);
    const msgpack::unpack_limit limit(max_array, /*map=*/16, /*str=*/1024, /*bin=*/64, /*ext=*/0, /*depth=*/3);
    oh = msgpack::unpack(reinterpret_cast<const char*>(bytes), n, off, nullptr, nullptr, limit);
  } catch (const std::exception& e) {
    SF_ZMQ_REFUSE(Defect::kHeader, "not valid msgpack ({})", e.what());
  }
  if (off != n) SF_ZMQ_REFUSE(Defect::kHeader, "{} bytes follow the msgpack map", n - off);
  const msgpack::object& o = oh.get();
  if (o.type != msgpack::type::MAP) SF_ZMQ_REFUSE(Defect::kHeader, "expected a map");
  Header h;
  unsigned seen = 0;
  uint32_t version = 0, kind = 0;
  int64_t from = -1, size = 0;
  try {
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const auto& kv = o.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR) SF_ZMQ_REFUSE(Defect::kHeader, "a key is not a string");
      const std::string_view key(kv.key.via.str.ptr, kv.key.via.str.size);
      const msgpack::object& v = kv.val;
      unsigned field = 0;
      if (key == "v") {
        field = kV, version = v.as<uint32_t>();
      } else if (key == "kind") {
        field = kKind, kind = v.as<uint32_t>();
      } else if (key == "from") {
        field = kFrom, from = v.as<int64_t>();
      } else if (key == "tag") {
        field = kTag, h.tag = v.as<uint64_t>();
      } else if (key == "dtype") {
        field = kDtype;
        const auto s = v.as<std::string_view>();
        if (s != "f32" && s != "i32") SF_ZMQ_REFUSE(Defect::kHeader, "unknown dtype '{}'", s);
        h.dtype = s == "f32" ? DType::kF32 : DType::kI32;
      } else if (key == "shape") {
        field = kShape, h.shape = v.as<Shape>();
      } else if (key == "nbytes") {
        field = kNbytes, h.nbytes = v.as<uint64_t>();
      } else if (key == "size") {
        field = kSize, size = v.as<int64_t>();
      } else if (key == "auth") {
        field = kAuth;
        if (v.type != msgpack::type::BIN) SF_ZMQ_REFUSE(Defect::kHeader, "auth is not binary");
        h.auth.assign(v.via.bin.ptr, v.via.bin.ptr + v.via.bin.size);
      } else if (key == "eps") {
        field = kEps, h.endpoints = v.as<std::vector<std::string>>();
      }  // unknown keys are ignored: newer writers may add fields
      if (seen & field) SF_ZMQ_REFUSE(Defect::kHeader, "key '{}' appears twice", key);
      seen |= field;
    }
  } catch (const msgpack::type_error&) {
    SF_ZMQ_REFUSE(Defect::kHeader, "a field has the wrong msgpack type");
  }
  if ((seen & (kV | kKind | kFrom)) != (kV | kKind | kFrom)) SF_ZMQ_REFUSE(Defect::kHeader, "missing v, kind or from");
  if (version != kWireVersion) SF_ZMQ_REFUSE(Defect::kHeader, "version {} (this build reads {})", version, kWireVersion);
  if (kind > kLastKind) SF_ZMQ_REFUSE(Defect::kHeader, "unknown kind {}", kind);
  h.kind = static_cast<Kind>(kind);
  const unsigned need = required(h.kind);
  if ((seen & need) != need) SF_ZMQ_REFUSE(Defect::kHeader, "kind {} lacks one of its fields", kind);
  if (from < 0 || from >= limits.world_size)
    SF_ZMQ_REFUSE(Defect::kSender, "sender rank {} outside a world of {}", from, limits.world_size);
  h.from = static_cast<int>(from);
  if (h.auth.size() != auth_bytes(h.kind))
    SF_ZMQ_REFUSE(Defect::kHeader, "auth of {} bytes where kind {} has {}", h.auth.size(), kind, auth_bytes(h.kind));
  if (h.kind == Kind::kJoin) {
    if (size < 1 || size > 1 << 20) SF_ZMQ_REFUSE(Defect::kHeader, "world size {}", size);
    if (h.endpoints.size() != 1) SF_ZMQ_REFUSE(Defect::kHeader, "a join carries {} endpoints, not 1", h.endpoints.size());
    h.size = static_cast<int>(size);
  }
  if (h.kind == Kind::kLane && h.endpoints.size() != 1)
    SF_ZMQ_REFUSE(Defect::kHeader, "a lane offer carries {} endpoints, not 1", h.endpoints.size());
  if (h.kind == Kind::kTable && h.endpoints.size() != static_cast<size_t>(limits.world_size))
    SF_ZMQ_REFUSE(Defect::kHeader, "a table of {} endpoints for a world of {}", h.endpoints.size(), limits.world_size);
  if (!has_tensor(h.kind)) return h;
  if (h.shape.size() > kMaxDims) SF_ZMQ_REFUSE(Defect::kHeader, "{} dims (at most {})", h.shape.size(), kMaxDims);
  if (h.nbytes > limits.max_payload_bytes)
    SF_ZMQ_REFUSE(Defect::kOversized, "payload of {} bytes over the limit of {}", h.nbytes, limits.max_payload_bytes);
  uint64_t elements = 1;
  for (int64_t d : h.shape) {
    if (d < 0) SF_ZMQ_REFUSE(Defect::kHeader, "negative dim in shape {}", brief_shape(h.shape));
    if (__builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements) || elements > (uint64_t{1} << 61))
      SF_ZMQ_REFUSE(Defect::kByteCount, "shape {} overflows the element count", brief_shape(h.shape));
  }
  if (h.nbytes != elements * dtype_size(h.dtype))
    SF_ZMQ_REFUSE(Defect::kByteCount, "nbytes {} does not match {}{}", h.nbytes, dtype_name(h.dtype), brief_shape(h.shape));
  return h;
}

}  // namespace sf::comm::zmq
