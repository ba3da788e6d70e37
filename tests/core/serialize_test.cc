// Tests for the msgpack tensor format (core/serialize.h): bitwise round trips of both dtypes
// over shapes from scalar to zero-size, the exact header bytes (so the documented format
// cannot drift silently), and decode_header / deserialize refusing every kind of malformed
// input with IoError rather than crashing.
#include <shardflow/core/serialize.h>

#include <gtest/gtest.h>
#include <msgpack.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>

namespace sf {
namespace {

// f32 tensor with awkward bit patterns (NaN, -0, denormal, inf) followed by random values.
Tensor f32_tensor(const Shape& shape) {
  Tensor t(shape, DType::kF32);
  fill_random(t, Distribution::kNormal, 0.0f, 3.0f, 1, 2);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(), -0.0f, std::numeric_limits<float>::denorm_min(),
                           -std::numeric_limits<float>::infinity()};
  for (int64_t i = 0; i < std::min<int64_t>(t.numel(), 4); ++i) t.f32()[i] = special[i];
  return t;
}

Tensor i32_tensor(const Shape& shape) {
  Tensor t(shape, DType::kI32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.i32()[i] = static_cast<int32_t>(i * 2654435761u) ^ (i % 2 ? std::numeric_limits<int32_t>::min() : 0);
  return t;
}

// A header map with the given fields, packed by hand (`fields` entries, in this order).
struct HeaderFields {
  uint32_t version = 1;
  std::string dtype = "f32";
  Shape shape = {2, 3};
  uint64_t nbytes = 24;
};
std::string pack_header(const HeaderFields& h) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(4);
  pk.pack(std::string("v"));
  pk.pack(h.version);
  pk.pack(std::string("dtype"));
  pk.pack(h.dtype);
  pk.pack(std::string("shape"));
  pk.pack(h.shape);
  pk.pack(std::string("nbytes"));
  pk.pack(h.nbytes);
  return std::string(buf.data(), buf.size());
}

// decode_header must refuse `bytes` with an IoError whose message contains `needle`.
::testing::AssertionResult refuses(const std::string& bytes, const std::string& needle = "") {
  size_t consumed = 12345;
  try {
    decode_header(bytes.data(), bytes.size(), &consumed);
    return ::testing::AssertionFailure() << "decode_header accepted " << bytes.size() << " bytes";
  } catch (const IoError& e) {
    if (std::string(e.what()).find(needle) == std::string::npos)
      return ::testing::AssertionFailure() << "message '" << e.what() << "' lacks '" << needle << "'";
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-IoError: " << e.what();
  }
  if (consumed != 12345) return ::testing::AssertionFailure() << "set *consumed on failure";
  return ::testing::AssertionSuccess();
}

TEST(Serialize, RoundTripIsBitwiseForBothDtypesAndAllShapes) {
  const std::vector<Shape> shapes = {{}, {0}, {1}, {7}, {2, 3}, {3, 0}, {0, 4, 5}, {1, 2, 3, 4}, {257, 3}};
  for (const Shape& shape : shapes) {
    for (const Tensor& t : {f32_tensor(shape), i32_tensor(shape)}) {
      SCOPED_TRACE(t.describe());
      const std::string bytes = serialize(t);
      EXPECT_EQ(bytes.size(), encode_header(t).size() + t.nbytes());
      size_t consumed = 0;
      const Tensor back = deserialize(bytes.data(), bytes.size(), &consumed);
      EXPECT_EQ(consumed, bytes.size());
      EXPECT_EQ(back.dtype(), t.dtype());
      EXPECT_EQ(back.shape(), t.shape());
      EXPECT_TRUE(bitwise_equal(back, t));
      EXPECT_FALSE(back.shares_storage(t));
    }
  }
}

TEST(Serialize, ViewsSerializeOnlyTheirElements) {
  Tensor t = f32_tensor({6, 4});
  Tensor rows = t.rows(2, 5);
  const std::string bytes = serialize(rows);
  const Tensor back = deserialize(bytes.data(), bytes.size());
  EXPECT_EQ(back.shape(), (Shape{3, 4}));
  EXPECT_EQ(0, std::memcmp(back.raw(), t.f32() + 8, 12 * sizeof(float)));
}

TEST(Serialize, RecordsBackToBackDecodeInSequence) {
  const Tensor a = f32_tensor({3, 2}), b = i32_tensor({}), c = f32_tensor({0});
  const std::string bytes = serialize(a) + serialize(b) + serialize(c);
  size_t off = 0;
  for (const Tensor& want : {a, b, c}) {
    size_t used = 0;
    const Tensor got = deserialize(bytes.data() + off, bytes.size() - off, &used);
    EXPECT_TRUE(bitwise_equal(got, want)) << want.describe();
    off += used;
  }
  EXPECT_EQ(off, bytes.size());
}

TEST(Serialize, HeaderBytesArePinned) {
  // docs/tensor_format.md: a map of 4 entries v, dtype, shape, nbytes, in this order, with the
  // smallest msgpack encodings. Changing a byte here changes the wire and file format.
  const std::string header = encode_header(Tensor({2, 3}));
  const std::string want =
      "\x84"                        // fixmap, 4 entries
      "\xa1v\x01"                   // "v": 1
      "\xa5" "dtype" "\xa3" "f32"   // "dtype": "f32"
      "\xa5" "shape" "\x92\x02\x03" // "shape": [2, 3]
      "\xa6" "nbytes" "\x18";       // "nbytes": 24
  EXPECT_EQ(header, want);
  ASSERT_FALSE(header.empty());
  EXPECT_EQ(static_cast<unsigned char>(header[0]), 0x84);
  for (const char* key : {"v", "dtype", "shape", "nbytes"}) EXPECT_NE(header.find(key), std::string::npos) << key;

  const std::string i32_scalar = encode_header(Tensor(Shape{}, DType::kI32));
  EXPECT_EQ(i32_scalar, std::string("\x84\xa1v\x01\xa5" "dtype\xa3i32\xa5shape\x90\xa6nbytes\x04"));
}

TEST(Serialize, DecodeHeaderReportsHeaderLengthAndFields) {
  const Tensor t = i32_tensor({4, 5});
  const std::string bytes = serialize(t);
  size_t consumed = 0;
  const TensorHeader h = decode_header(bytes.data(), bytes.size(), &consumed);
  EXPECT_EQ(consumed, encode_header(t).size());
  EXPECT_EQ(h.version, kTensorFormatVersion);
  EXPECT_EQ(h.dtype, DType::kI32);
  EXPECT_EQ(h.shape, (Shape{4, 5}));
  EXPECT_EQ(h.nbytes, 80u);
}

TEST(Serialize, DecodeHeaderIgnoresUnknownKeysAndKeyOrder) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(5);
  pk.pack(std::string("nbytes"));
  pk.pack(uint64_t{8});
  pk.pack(std::string("future"));
  pk.pack(std::string("field"));
  pk.pack(std::string("shape"));
  pk.pack(Shape{2});
  pk.pack(std::string("dtype"));
  pk.pack(std::string("i32"));
  pk.pack(std::string("v"));
  pk.pack(1);
  size_t consumed = 0;
  const TensorHeader h = decode_header(buf.data(), buf.size(), &consumed);
  EXPECT_EQ(consumed, buf.size());
  EXPECT_EQ(h.dtype, DType::kI32);
  EXPECT_EQ(h.shape, (Shape{2}));
}

TEST(Serialize, RefusesTruncatedPayload) {
  const std::string bytes = serialize(f32_tensor({3, 4}));
  const size_t header = encode_header(Tensor({3, 4})).size();
  for (size_t cut : {header, header + 1, bytes.size() - 1}) {
    try {
      deserialize(bytes.data(), cut);
      ADD_FAILURE() << "accepted " << cut << " of " << bytes.size() << " bytes";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
  }
}

TEST(Serialize, RefusesEveryTruncatedHeader) {
  const std::string header = encode_header(Tensor({2, 3}));
  for (size_t n = 0; n < header.size(); ++n) EXPECT_TRUE(refuses(header.substr(0, n))) << "prefix of " << n << " bytes";
}

TEST(Serialize, RefusesWrongVersion) {
  HeaderFields h;
  h.version = 2;
  EXPECT_TRUE(refuses(pack_header(h), "version 2"));
  h.version = 0;
  EXPECT_TRUE(refuses(pack_header(h), "version 0"));
}

TEST(Serialize, RefusesUnknownDtype) {
  HeaderFields h;
  h.dtype = "f64";
  EXPECT_TRUE(refuses(pack_header(h), "unknown dtype 'f64'"));
  h.dtype = "";
  EXPECT_TRUE(refuses(pack_header(h), "unknown dtype"));
}

TEST(Serialize, RefusesNbytesNotMatchingShape) {
  HeaderFields h;
  h.nbytes = 20;  // (2, 3) f32 is 24
  EXPECT_TRUE(refuses(pack_header(h), "nbytes 20"));
  h.nbytes = 28;
  EXPECT_TRUE(refuses(pack_header(h), "does not match"));
  h.shape = {};
  h.nbytes = 0;  // a scalar holds one element
  EXPECT_TRUE(refuses(pack_header(h), "does not match"));
  h.shape = {1 << 20, 1 << 20};  // 4 TiB: over the limit even though nbytes matches
  h.nbytes = uint64_t{4} << 40;
  EXPECT_TRUE(refuses(pack_header(h), "exceeds the size limit"));
}

TEST(Serialize, RefusesNegativeDims) {
  HeaderFields h;
  h.shape = {-2, -3};
  EXPECT_TRUE(refuses(pack_header(h), "negative dim"));
}

TEST(Serialize, RefusesShapesBeyondTheSizeLimit) {
  HeaderFields h;
  h.shape = {int64_t{1} << 62, 4};  // numel overflows; nbytes 0 must not sneak through
  h.nbytes = 0;
  EXPECT_TRUE(refuses(pack_header(h), "size limit"));
}

TEST(Serialize, RefusesHugeContainerCountsWithoutAllocating) {
  const char huge_map[] = {'\xdf', '\xff', '\xff', '\xff', '\xff'};  // map32 with 2^32-1 entries
  size_t used = 0;
  EXPECT_THROW(decode_header(huge_map, sizeof huge_map, &used), IoError);
}

TEST(Serialize, RefusesMissingFieldsAndWrongFieldTypes) {
  msgpack::sbuffer missing;
  msgpack::packer<msgpack::sbuffer> pk(missing);
  pk.pack_map(2);
  pk.pack(std::string("v"));
  pk.pack(1);
  pk.pack(std::string("dtype"));
  pk.pack(std::string("f32"));
  EXPECT_TRUE(refuses(std::string(missing.data(), missing.size()), "missing"));

  msgpack::sbuffer wrong;
  msgpack::packer<msgpack::sbuffer> pw(wrong);
  pw.pack_map(4);
  pw.pack(std::string("v"));
  pw.pack(std::string("one"));  // a string where an integer belongs
  pw.pack(std::string("dtype"));
  pw.pack(std::string("f32"));
  pw.pack(std::string("shape"));
  pw.pack(Shape{1});
  pw.pack(std::string("nbytes"));
  pw.pack(4);
  EXPECT_TRUE(refuses(std::string(wrong.data(), wrong.size()), "wrong msgpack type"));

  msgpack::sbuffer int_key;  // keys must be strings
  msgpack::packer<msgpack::sbuffer> pi(int_key);
  pi.pack_map(1);
  pi.pack(7);
  pi.pack(7);
  EXPECT_TRUE(refuses(std::string(int_key.data(), int_key.size())));
}

TEST(Serialize, RefusesNotAMap) {
  msgpack::sbuffer arr;
  msgpack::pack(arr, std::vector<int>{1, 2, 3});
  EXPECT_TRUE(refuses(std::string(arr.data(), arr.size()), "expected a map"));
  EXPECT_TRUE(refuses(std::string("\x2a", 1), "expected a map"));  // the integer 42
  EXPECT_TRUE(refuses(std::string("\xc0", 1), "expected a map"));  // nil
}

TEST(Serialize, RefusesGarbageBytesWithoutCrashing) {
  EXPECT_TRUE(refuses(std::string("\xc1\xc1\xc1\xc1", 4)));  // 0xc1 is never used by msgpack
  EXPECT_TRUE(refuses("not a tensor header at all"));         // a fixint, then ignored text
  EXPECT_TRUE(refuses(std::string("\xdf\xff\xff\xff\xff", 5)));  // map32 claiming 2^32-1 entries
  EXPECT_TRUE(refuses(std::string(64, '\x91')));                 // deeply nested arrays, no end
  // Deterministic random byte strings of many lengths.
  for (uint64_t trial = 0; trial < 500; ++trial) {
    std::string bytes(1 + trial % 40, '\0');
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<char>(static_cast<uint8_t>(uniform_at(3, trial, i) * 256.0f));
    EXPECT_TRUE(refuses(bytes)) << "trial " << trial;
  }
}

TEST(Serialize, CorruptedHeaderBytesNeverCrashDeserialize) {
  // Flip each byte of a valid record through a few values: every outcome is either a tensor
  // that matches the header it was decoded from or an IoError.
  const std::string good = serialize(f32_tensor({2, 3}));
  const size_t header = encode_header(Tensor({2, 3})).size();
  for (size_t i = 0; i < header; ++i) {
    for (unsigned char v : {0x00, 0x7f, 0x80, 0xc1, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(v);
      try {
        size_t used = 0;
        const Tensor t = deserialize(bad.data(), bad.size(), &used);
        EXPECT_LE(used, bad.size());
        EXPECT_EQ(t.nbytes(), static_cast<size_t>(numel(t.shape())) * dtype_size(t.dtype()));
      } catch (const IoError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << "byte " << i << " = " << int{v} << ": non-IoError " << e.what();
      }
    }
  }
}

}  // namespace
}  // namespace sf
