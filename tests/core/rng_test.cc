// Tests for the counter-based RNG (core/rng.h): Philox4x32-10 against the published
// known-answer vectors, the moments of uniform_at / normal_at, and the property parameter
// sharding relies on: a shard filled through a ShardRegion equals, bit for bit, the same
// slice of the full tensor filled at once.
#include <shardflow/core/rng.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>

namespace sf {
namespace {

// Copies rows [r0, r1) x cols [c0, c1) of a 2-D f32 tensor into a fresh tensor.
Tensor slice2d(const Tensor& full, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  Tensor out({r1 - r0, c1 - c0});
  const int64_t cols = full.dim(1);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) out.f32()[(r - r0) * (c1 - c0) + (c - c0)] = full.f32()[r * cols + c];
  return out;
}

// Index of the first element where two equally sized f32 tensors differ bitwise, or -1.
int64_t first_bitwise_mismatch(const Tensor& a, const Tensor& b) {
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(a.f32() + i, b.f32() + i, sizeof(float)) != 0) return i;
  return -1;
}

TEST(Philox, MatchesRandom123KnownAnswers) {
  // kat_vectors of the Random123 distribution, philox4x32 with 10 rounds.
  using Block = std::array<uint32_t, 4>;
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}), (Block{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (Block{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (Block{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, SameAddressGivesSameValueAndNeighboursDiffer) {
  EXPECT_EQ(uniform_at(7, 3, 12345), uniform_at(7, 3, 12345));
  EXPECT_EQ(normal_at(7, 3, 12345), normal_at(7, 3, 12345));
  EXPECT_NE(uniform_at(7, 3, 12345), uniform_at(7, 3, 12346));
  EXPECT_NE(uniform_at(7, 3, 12345), uniform_at(8, 3, 12345));  // seed matters
  // Indices past 2^32 use the counter's high word rather than wrapping onto low indices.
  EXPECT_NE(uniform_at(7, 3, 5), uniform_at(7, 3, (uint64_t{1} << 32) + 5));
}

TEST(Philox, UniformIsInUnitIntervalWithUniformMoments) {
  constexpr int kN = 100000;
  double sum = 0, sum_sq = 0;
  float lo = 1, hi = 0;
  for (int i = 0; i < kN; ++i) {
    const float u = uniform_at(42, 1, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f) << "index " << i;
    ASSERT_LT(u, 1.0f) << "index " << i;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum_sq += static_cast<double>(u) * u;
  }
  const double mean = sum / kN, var = sum_sq / kN - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.005);         // standard error ~0.0009
  EXPECT_NEAR(var, 1.0 / 12.0, 0.002);   // 0.0833
  EXPECT_LT(lo, 0.001f);
  EXPECT_GT(hi, 0.999f);
}

TEST(Philox, NormalHasZeroMeanUnitStd) {
  constexpr int kN = 100000;
  double sum = 0, sum_sq = 0;
  int beyond_two_sigma = 0;
  for (int i = 0; i < kN; ++i) {
    const float z = normal_at(42, 2, static_cast<uint64_t>(i));
    ASSERT_TRUE(std::isfinite(z)) << "index " << i;
    sum += z;
    sum_sq += static_cast<double>(z) * z;
    beyond_two_sigma += std::fabs(z) > 2.0f;
  }
  const double mean = sum / kN, std_dev = std::sqrt(sum_sq / kN - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(std_dev, 1.0, 0.015);
  EXPECT_NEAR(beyond_two_sigma / static_cast<double>(kN), 0.0455, 0.005);  // a normal's tails
}

TEST(FillRandom, AppliesAffineMapToTheDistribution) {
  Tensor t({1000});
  fill_random(t, Distribution::kUniform, -3.0f, 2.0f, 5, 9);
  for (int64_t i = 0; i < t.numel(); ++i) {
    EXPECT_EQ(t.f32()[i], -3.0f + 2.0f * uniform_at(5, 9, static_cast<uint64_t>(i))) << i;
    EXPECT_GE(t.f32()[i], -3.0f);
    EXPECT_LT(t.f32()[i], -1.0f);
  }
}

TEST(FillRandom, ShardsEqualTheSliceOfTheFullTensorBitwise) {
  for (Distribution dist : {Distribution::kUniform, Distribution::kNormal}) {
    Tensor full({6, 10});
    fill_random(full, dist, 0.5f, 0.25f, 11, stream_of("layer.weight"));

    // Rows 2..4 x cols 5..10.
    Tensor block({2, 5});
    fill_random(block, dist, 0.5f, 0.25f, 11, stream_of("layer.weight"), {{6, 10}, {2, 5}});
    const Tensor want_block = slice2d(full, 2, 4, 5, 10);
    EXPECT_TRUE(bitwise_equal(block, want_block)) << "first mismatch at " << first_bitwise_mismatch(block, want_block);

    // Split on dim 1 into two column halves: each is the matching slice, all rows.
    for (int64_t c0 : {0, 5}) {
      Tensor half({6, 5});
      fill_random(half, dist, 0.5f, 0.25f, 11, stream_of("layer.weight"), {{6, 10}, {0, c0}});
      const Tensor want = slice2d(full, 0, 6, c0, c0 + 5);
      EXPECT_TRUE(bitwise_equal(half, want)) << "cols from " << c0 << ": first mismatch at "
                                             << first_bitwise_mismatch(half, want);
    }

    // A row split is a contiguous range of global indices.
    Tensor rows({3, 10});
    fill_random(rows, dist, 0.5f, 0.25f, 11, stream_of("layer.weight"), {{6, 10}, {3, 0}});
    EXPECT_TRUE(bitwise_equal(rows, full.rows(3, 6).clone()));
  }
}

TEST(FillRandom, ShardOutsideTheFullShapeIsRefused) {
  Tensor shard({2, 5});
  EXPECT_THROW(fill_random(shard, Distribution::kUniform, 0, 1, 1, 1, {{6, 10}, {5, 0}}), ShapeError);  // rows 5..7
  EXPECT_THROW(fill_random(shard, Distribution::kUniform, 0, 1, 1, 1, {{6, 10}, {0, 6}}), ShapeError);  // cols 6..11
  EXPECT_THROW(fill_random(shard, Distribution::kUniform, 0, 1, 1, 1, {{6, 10}, {0}}), ShapeError);     // rank
  EXPECT_THROW(fill_random(shard, Distribution::kUniform, 0, 1, 1, 1, {{6, 10}, {-1, 0}}), ShapeError);
}

TEST(FillRandom, DifferentStreamsAndSeedsDiffer) {
  Tensor a({64}), b({64}), c({64}), d({64});
  fill_random(a, Distribution::kUniform, 0, 1, 1, stream_of("fc1.weight"));
  fill_random(b, Distribution::kUniform, 0, 1, 1, stream_of("fc2.weight"));
  fill_random(c, Distribution::kUniform, 0, 1, 2, stream_of("fc1.weight"));
  fill_random(d, Distribution::kUniform, 0, 1, 1, stream_of("fc1.weight"));
  int same_ab = 0, same_ac = 0;
  for (int64_t i = 0; i < 64; ++i) {
    same_ab += a.f32()[i] == b.f32()[i];
    same_ac += a.f32()[i] == c.f32()[i];
  }
  EXPECT_EQ(same_ab, 0);
  EXPECT_EQ(same_ac, 0);
  EXPECT_TRUE(bitwise_equal(a, d));
}

// FNV-1a 64 with the given offset basis, written out as the reference.
uint64_t fnv1a(const std::string& s, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

TEST(StreamOf, IsStableForAName) {
  // Stream ids select parameter values, so they must never change between builds: they are
  // standard 64-bit FNV-1a hashes (known answers from the FNV reference).
  constexpr uint64_t kBasis = 14695981039346656037ull;
  EXPECT_EQ(stream_of(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(stream_of("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(stream_of("foobar"), 0x85944171f73967e8ull);
  for (const char* name : {"fc1_weight", "fc1_bias", "dense_relu_sequential.0.weight", "moments.fc2_bias"})
    EXPECT_EQ(stream_of(name), fnv1a(name, kBasis)) << name;
  EXPECT_EQ(stream_of("fc1.weight"), stream_of(std::string("fc1.") + "weight"));
  EXPECT_NE(stream_of("fc1.weight"), stream_of("fc1.bias"));
}

}  // namespace
}  // namespace sf
