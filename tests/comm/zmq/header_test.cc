// The zmq header codec (comm/zmq/header.h): every kind round-trips, and every malformed form
// is refused with the defect that names its ZmqStats counter — never a crash, never a read
// past the frame.
#include <shardflow/comm/zmq/header.h>

#include <gtest/gtest.h>

#include <msgpack.hpp>

#include <functional>
#include <string>
#include <vector>

namespace sf::comm::zmq {
namespace {

const HeaderLimits kLimits{4, 1 << 20};

Header data_header() {
  Header h;
  h.kind = Kind::kData;
  h.from = 2;
  h.tag = 0x8000'1234'5678'9abcull;
  h.dtype = DType::kI32;
  h.shape = {3, 0, 5};
  h.nbytes = 0;
  return h;
}

Header roundtrip(const Header& h) {
  const std::vector<uint8_t> b = encode_header(h);
  return decode_header(b.data(), b.size(), kLimits);
}

TEST(ZmqHeader, EveryKindRoundTrips) {
  Header d = data_header();
  EXPECT_EQ(roundtrip(d), d);
  d.shape = {2, 3};
  d.nbytes = 24;
  d.dtype = DType::kF32;
  EXPECT_EQ(roundtrip(d), d);
  d.shape = {};  // a scalar
  d.nbytes = 4;
  EXPECT_EQ(roundtrip(d), d);

  Header c;
  c.kind = Kind::kClose;
  c.from = 3;
  EXPECT_EQ(roundtrip(c), c);
  Header g;
  g.kind = Kind::kLane;
  g.auth.assign(kLaneOfferBytes, 0x5c);
  g.endpoints = {"tcp://10.0.0.7:40123"};
  EXPECT_EQ(roundtrip(g), g);
  for (Kind k : {Kind::kHello, Kind::kChallenge, Kind::kProof}) {
    Header a;
    a.kind = k;
    a.from = 1;
    a.auth.assign(k == Kind::kChallenge ? kNonceBytes + kProofBytes : 32, 0xab);
    EXPECT_EQ(roundtrip(a), a);
  }
  Header j;
  j.kind = Kind::kJoin;
  j.from = 1;
  j.size = 4;
  j.endpoints = {"tcp://10.0.0.2:41000"};
  EXPECT_EQ(roundtrip(j), j);
  Header t;
  t.kind = Kind::kTable;
  t.endpoints = {"ipc:///tmp/a", "ipc:///tmp/b", "ipc:///tmp/c", "ipc:///tmp/d"};
  EXPECT_EQ(roundtrip(t), t);
}

TEST(ZmqHeader, DataHeaderIsSmall) {
  Header d = data_header();
  d.shape = {1 << 15};
  d.nbytes = 4 << 15;
  EXPECT_LT(encode_header(d).size(), 64u);
}

// Packs a map from (key, packer-callback) pairs, for hand-made malformed headers.
using Field = std::pair<std::string, std::function<void(msgpack::packer<msgpack::sbuffer>&)>>;
std::vector<uint8_t> pack_map(const std::vector<Field>& fields) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(static_cast<uint32_t>(fields.size()));
  for (const auto& [k, f] : fields) {
    pk.pack(k);
    f(pk);
  }
  const auto* p = reinterpret_cast<const uint8_t*>(buf.data());
  return {p, p + buf.size()};
}

template <class T>
std::function<void(msgpack::packer<msgpack::sbuffer>&)> val(T v) {
  return [v](msgpack::packer<msgpack::sbuffer>& pk) { pk.pack(v); };
}

// A valid data header of f32 (2, 3) with one field replaced or added.
std::vector<uint8_t> data_with(const std::string& key, std::function<void(msgpack::packer<msgpack::sbuffer>&)> f) {
  std::vector<Field> fields = {{"v", val(kWireVersion)},           {"kind", val(0)},
                               {"from", val(1)},        {"tag", val(7)},
                               {"dtype", val(std::string("f32"))}, {"shape", val(std::vector<int64_t>{2, 3})},
                               {"nbytes", val(24)}};
  bool replaced = false;
  for (auto& [k, g] : fields)
    if (k == key) g = f, replaced = true;
  if (!replaced) fields.push_back({key, f});
  return pack_map(fields);
}

std::vector<uint8_t> data_without(const std::string& key) {
  std::vector<Field> fields = {{"v", val(kWireVersion)},    {"kind", val(0)}, {"from", val(1)}, {"tag", val(7)},
                               {"dtype", val(std::string("f32"))}, {"shape", val(std::vector<int64_t>{2, 3})},
                               {"nbytes", val(24)}};
  std::erase_if(fields, [&](const Field& f) { return f.first == key; });
  return pack_map(fields);
}

void expect_defect(const std::vector<uint8_t>& bytes, Defect want, const std::string& needle) {
  try {
    decode_header(bytes.data(), bytes.size(), kLimits);
    ADD_FAILURE() << "accepted; expected: " << needle;
  } catch (const MalformedFrame& e) {
    EXPECT_EQ(static_cast<int>(e.defect()), static_cast<int>(want)) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ZmqHeader, TheBaselineOfTheMalformedCasesIsValid) {
  const auto b = data_with("extra", val(5));  // unknown keys are ignored
  const Header h = decode_header(b.data(), b.size(), kLimits);
  EXPECT_EQ(h.shape, (Shape{2, 3}));
  EXPECT_EQ(h.nbytes, 24u);
}

TEST(ZmqHeader, RefusesWhatIsNotOneMsgpackMap) {
  expect_defect({}, Defect::kHeader, "not valid msgpack");
  expect_defect({0xc1}, Defect::kHeader, "not valid msgpack");  // a reserved byte
  expect_defect({0x01}, Defect::kHeader, "expected a map");
  std::vector<uint8_t> b = data_with("v", val(kWireVersion));
  b.pop_back();  // truncated
  expect_defect(b, Defect::kHeader, "not valid msgpack");
  b = data_with("v", val(kWireVersion));
  b.push_back(0x00);  // trailing byte
  expect_defect(b, Defect::kHeader, "follow the msgpack map");
  // A map header that claims 2^32-1 entries must not make msgpack allocate them.
  expect_defect({0xdf, 0xff, 0xff, 0xff, 0xff}, Defect::kHeader, "not valid msgpack");
  // An array length far over the limit, likewise.
  expect_defect(data_with("shape", [](auto& pk) { pk.pack_array(100000); }), Defect::kHeader, "not valid msgpack");
}

TEST(ZmqHeader, RefusesMissingRepeatedAndMistypedFields) {
  for (const char* k : {"v", "kind", "from"}) expect_defect(data_without(k), Defect::kHeader, "missing v, kind or from");
  for (const char* k : {"tag", "dtype", "shape", "nbytes"}) expect_defect(data_without(k), Defect::kHeader, "lacks");
  std::vector<uint8_t> twice = pack_map({{"v", val(kWireVersion)}, {"v", val(kWireVersion)}, {"kind", val(1)}, {"from", val(0)}});
  expect_defect(twice, Defect::kHeader, "appears twice");
  expect_defect(data_with("tag", val(std::string("x"))), Defect::kHeader, "wrong msgpack type");
  expect_defect(data_with("nbytes", val(-1)), Defect::kHeader, "wrong msgpack type");
  expect_defect(data_with("shape", val(std::string("2x3"))), Defect::kHeader, "wrong msgpack type");
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(1);
  pk.pack(5);  // an integer key
  pk.pack(1);
  expect_defect({buf.data(), buf.data() + buf.size()}, Defect::kHeader, "not a string");
}

TEST(ZmqHeader, RefusesUnknownVersionKindDtypeAndBadAuth) {
  expect_defect(data_with("v", val(3)), Defect::kHeader, "version 3");
  expect_defect(data_with("kind", val(99)), Defect::kHeader, "unknown kind 99");
  expect_defect(data_with("dtype", val(std::string("f64"))), Defect::kHeader, "unknown dtype 'f64'");
  expect_defect(pack_map({{"v", val(kWireVersion)}, {"kind", val(3)}, {"from", val(0)},
                          {"auth", [](auto& p) { p.pack_bin(5), p.pack_bin_body("abcde", 5); }}}),
                Defect::kHeader, "auth of 5 bytes");
  expect_defect(pack_map({{"v", val(kWireVersion)}, {"kind", val(3)}, {"from", val(0)}, {"auth", val(std::string(32, 'a'))}}),
                Defect::kHeader, "auth is not binary");
  // Auth over the msgpack limit (64) is refused by the parser itself.
  expect_defect(pack_map({{"v", val(kWireVersion)}, {"kind", val(3)}, {"from", val(0)},
                          {"auth", [](auto& p) { p.pack_bin(100), p.pack_bin_body(std::string(100, 'a').data(), 100); }}}),
                Defect::kHeader, "not valid msgpack");
  expect_defect(pack_map({{"v", val(kWireVersion)}, {"kind", val(7)}, {"from", val(0)},
                          {"eps", val(std::vector<std::string>{"a"})}}),
                Defect::kHeader, "a table of 1 endpoints for a world of 4");
  expect_defect(pack_map({{"v", val(kWireVersion)}, {"kind", val(6)}, {"from", val(1)}, {"size", val(4)},
                          {"eps", val(std::vector<std::string>{"a", "b"})}}),
                Defect::kHeader, "carries 2 endpoints");
}

TEST(ZmqHeader, RefusesUnknownSenders) {
  expect_defect(data_with("from", val(4)), Defect::kSender, "sender rank 4 outside a world of 4");
  expect_defect(data_with("from", val(-1)), Defect::kSender, "sender rank -1");
}

TEST(ZmqHeader, RefusesBadShapesAndByteCounts) {
  expect_defect(data_with("nbytes", val(20)), Defect::kByteCount, "nbytes 20 does not match f32(2, 3)");
  expect_defect(data_with("shape", val(std::vector<int64_t>{2, -3})), Defect::kHeader, "negative dim");
  expect_defect(data_with("shape", val(std::vector<int64_t>(17, 1))), Defect::kHeader, "17 dims");
  expect_defect(data_with("shape", val(std::vector<int64_t>{1ll << 40, 1ll << 40})), Defect::kByteCount, "overflows");
}

TEST(ZmqHeader, RefusesPayloadsOverTheLimit) {
  auto b = pack_map({{"v", val(kWireVersion)}, {"kind", val(0)}, {"from", val(1)}, {"tag", val(7)},
                     {"dtype", val(std::string("i32"))}, {"shape", val(std::vector<int64_t>{1 << 19})},
                     {"nbytes", val(uint64_t{4} << 19)}});
  expect_defect(b, Defect::kOversized, "over the limit of 1048576");
}

TEST(ZmqHeader, RandomBytesNeverEscapeAsAnythingButMalformedFrame) {
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> b(1 + i % 61);
    for (auto& c : b) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      c = static_cast<uint8_t>(x);
    }
    if (i % 3 == 0) b[0] = 0x80 | (b[0] & 0x0f);  // often a map, so field decoding is reached
    try {
      decode_header(b.data(), b.size(), kLimits);
    } catch (const MalformedFrame&) {
    }
  }
}

}  // namespace
}  // namespace sf::comm::zmq
