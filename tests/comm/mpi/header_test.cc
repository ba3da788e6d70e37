// The mpi transport's message header (comm/mpi/header.h) round-trips every field, and a
// malformed header is refused with IoError instead of being trusted. No MPI calls: runs
// without mpirun.
#include <gtest/gtest.h>

#include <shardflow/comm/mpi/header.h>
#include <shardflow/core/error.h>

namespace sf::comm::mpi {
namespace {

TEST(MpiHeader, RoundTripsEveryField) {
  for (const MessageHeader& h : {MessageHeader{MessageKind::kData, 0xFEDCBA9876543210ull, DType::kI32, {3, 0, 5}},
                                 MessageHeader{MessageKind::kData, 1, DType::kF32, {}},
                                 MessageHeader{MessageKind::kData, ~0ull, DType::kF32, {1000003}},
                                 MessageHeader{MessageKind::kClose, 0, DType::kF32, {}}}) {
    const auto bytes = encode_header(h);
    EXPECT_EQ(bytes.size(), kHeaderFixedBytes + 8 * h.shape.size());
    EXPECT_EQ(decode_header(bytes.data(), bytes.size()), h);
  }
  MessageHeader h{MessageKind::kData, 9, DType::kF32, {2, 3}};
  EXPECT_EQ(h.numel(), 6);
  EXPECT_EQ(h.payload_bytes(), 24u);
}

TEST(MpiHeader, RefusesMalformedBytes) {
  const auto good = encode_header({MessageKind::kData, 5, DType::kF32, {4, 4}});
  auto bad = [&](auto edit) {
    auto b = good;
    edit(b);
    EXPECT_THROW(decode_header(b.data(), b.size()), IoError);
  };
  bad([](auto& b) { b.resize(8); });           // shorter than the fixed part
  bad([](auto& b) { b[0] ^= 1; });             // magic
  bad([](auto& b) { b[4] = 9; });              // version
  bad([](auto& b) { b[5] = 7; });              // kind
  bad([](auto& b) { b[6] = 2; });              // dtype
  bad([](auto& b) { b[7] = 3; });              // ndim does not match the size
  bad([](auto& b) { b.back() = 0x80; });       // negative dimension
  bad([](auto& b) { b.push_back(0); });        // trailing byte
  EXPECT_THROW(encode_header({MessageKind::kData, 0, DType::kF32, Shape(kMaxDims + 1, 1)}), InvalidArgument);
}

}  // namespace
}  // namespace sf::comm::mpi
