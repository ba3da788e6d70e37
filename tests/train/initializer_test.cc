// Tests for the named parameter initializers (train/initializer.h): constant values, the
// bounds and spread of the random ones, determinism in (seed, name), shards generated as the
// slice of the full tensor, and the NotFound error for an unknown name.
#include <shardflow/train/initializer.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <shardflow/core/error.h>

namespace sf {
namespace {

struct Stats {
  double mean = 0, std_dev = 0;
  float min = 0, max = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  const float* p = t.f32();
  s.min = *std::min_element(p, p + t.numel());
  s.max = *std::max_element(p, p + t.numel());
  double sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    sum += p[i];
    sum_sq += static_cast<double>(p[i]) * p[i];
  }
  s.mean = sum / static_cast<double>(t.numel());
  s.std_dev = std::sqrt(sum_sq / static_cast<double>(t.numel()) - s.mean * s.mean);
  return s;
}

Tensor init(const Shape& shape, const std::string& how, uint64_t seed = 1, const std::string& name = "w") {
  Tensor t(shape);
  t.fill(123.0f);  // so that an initializer that writes nothing is caught
  initialize(t, how, seed, name);
  return t;
}

TEST(Initializer, ZerosAndOnesAreExact) {
  const Tensor z = init({3, 4}, "zeros");
  const Tensor o = init({3, 4}, "ones");
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(z.f32()[i], 0.0f) << i;
    EXPECT_EQ(o.f32()[i], 1.0f) << i;
  }
}

TEST(Initializer, DenseWeightIsBoundedByOneOverSqrtFanIn) {
  const Tensor w = init({784, 32}, "dense_weight:784");
  const float bound = 1.0f / 28.0f;  // 1 / sqrt(784)
  const Stats s = stats_of(w);
  EXPECT_GE(s.min, -bound);
  EXPECT_LE(s.max, bound);
  EXPECT_LT(s.min, -0.99f * bound);  // the whole range is used, not a narrower one
  EXPECT_GT(s.max, 0.99f * bound);
  EXPECT_NE(s.min, s.max);
  EXPECT_NEAR(s.mean, 0.0, 0.001);
  EXPECT_NEAR(s.std_dev, bound / std::sqrt(3.0), 0.001);  // U(-b, b) has std b / sqrt 3
}

TEST(Initializer, FanInComesFromTheShapeUnlessOverridden) {
  // A (out, in) = (16, 100) weight without override: fan_in = 100, bound 0.1.
  const Stats own = stats_of(init({16, 100}, "dense_weight"));
  EXPECT_LE(own.max, 0.1f);
  EXPECT_GT(own.max, 0.09f);
  // A bias of 16 elements with its weight's fan-in 400: bound 0.05, not 1/sqrt(16).
  const Stats bias = stats_of(init({16}, "dense_bias:400"));
  EXPECT_LE(bias.max, 0.05f);
  EXPECT_GE(bias.min, -0.05f);
}

TEST(Initializer, NormalHasStdOneHundredth) {
  const Stats s = stats_of(init({100, 100}, "normal"));
  EXPECT_NEAR(s.mean, 0.0, 0.0005);
  EXPECT_NEAR(s.std_dev, 0.01, 0.0005);
}

TEST(Initializer, OtherNamedSchemesUseTheirBounds) {
  // (out, in) = (30, 50): xavier bound sqrt(6 / 80), he_uniform sqrt(6 / 50), uniform 0.07.
  const Stats xavier = stats_of(init({30, 50}, "xavier_uniform"));
  EXPECT_LE(xavier.max, std::sqrt(6.0f / 80.0f));
  EXPECT_GT(xavier.max, 0.95f * std::sqrt(6.0f / 80.0f));
  const Stats he = stats_of(init({30, 50}, "he_uniform"));
  EXPECT_LE(he.max, std::sqrt(6.0f / 50.0f));
  EXPECT_GT(he.max, 0.95f * std::sqrt(6.0f / 50.0f));
  const Stats uni = stats_of(init({30, 50}, "uniform"));
  EXPECT_LE(uni.max, 0.07f);
  EXPECT_GT(uni.max, 0.066f);
  const Stats he_n = stats_of(init({100, 200}, "he_normal"));
  EXPECT_NEAR(he_n.std_dev, std::sqrt(2.0 / 200.0), 0.004);
}

TEST(Initializer, SameSeedAndNameGiveTheSameValues) {
  EXPECT_TRUE(bitwise_equal(init({8, 9}, "dense_weight:9", 5, "fc1.weight"), init({8, 9}, "dense_weight:9", 5, "fc1.weight")));
  const Tensor base = init({8, 9}, "dense_weight:9", 5, "fc1.weight");
  const Tensor other_seed = init({8, 9}, "dense_weight:9", 6, "fc1.weight");
  const Tensor other_name = init({8, 9}, "dense_weight:9", 5, "fc2.weight");
  int same_seed_hits = 0, same_name_hits = 0;
  for (int64_t i = 0; i < base.numel(); ++i) {
    same_seed_hits += base.f32()[i] == other_seed.f32()[i];
    same_name_hits += base.f32()[i] == other_name.f32()[i];
  }
  EXPECT_EQ(same_seed_hits, 0);
  EXPECT_EQ(same_name_hits, 0);
}

TEST(Initializer, ShardIsTheSliceOfTheFullTensor) {
  const Tensor full = init({6, 4}, "normal", 9, "emb");
  Tensor shard({3, 4});
  initialize(shard, "normal", 9, "emb", {{6, 4}, {3, 0}});
  EXPECT_TRUE(bitwise_equal(shard, full.rows(3, 6).clone()));
  // The fan-in comes from the full shape, not the shard's: bound 1/sqrt(40), not 1/sqrt(10).
  const Tensor full_w = init({8, 40}, "dense_weight", 9, "w");
  Tensor col_shard({8, 10});
  initialize(col_shard, "dense_weight", 9, "w", {{8, 40}, {0, 30}});
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 10; ++c)
      EXPECT_EQ(col_shard.f32()[r * 10 + c], full_w.f32()[r * 40 + 30 + c]) << r << "," << c;
}

TEST(Initializer, UnknownNameThrowsNotFoundListingTheKnownOnes) {
  Tensor t({4});
  try {
    initialize(t, "glorot_fancy", 1, "w");
    FAIL() << "expected NotFound";
  } catch (const NotFound& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'glorot_fancy'"), std::string::npos) << msg;
    for (const char* known : {"normal", "zeros", "ones", "uniform", "xavier_uniform", "he_uniform", "he_normal",
                              "dense_weight", "dense_bias"})
      EXPECT_NE(msg.find(known), std::string::npos) << known << " missing from: " << msg;
  }
  EXPECT_THROW(check_initializer("Normal"), NotFound);  // names are case-sensitive
  EXPECT_NO_THROW(check_initializer("dense_bias:784"));
  EXPECT_THROW(check_initializer("dense_bias:abc"), InvalidArgument);
}

}  // namespace
}  // namespace sf
