// Dropout and CausalMask: Dropout at p = 0 is the identity; over 100k elements the kept fraction
// is 1 - p within 1% and every kept value is x / (1 - p); the mask changes with the salt and
// with the sample's seed and with nothing else (two samples of one seed share it); a block
// computed with offsets and global_shape, along any dim and along the batch with its seeds, is
// exactly that block of the whole tensor's mask; the gradient by finite differences and the
// refusals. CausalMask against a hand loop with and without offsets, a softmax after it with
// exact zeros above the diagonal and no NaN, its gradient (through the softmax and alone), and
// its refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::random_tensor;
using optest::run_graph;

// i32 seeds 1000 + 17 k: distinct per sample.
Tensor seed_tensor(int64_t n, int32_t first = 1000) {
  Tensor t({n}, DType::kI32);
  for (int64_t k = 0; k < n; ++k) t.i32()[k] = first + static_cast<int32_t>(17 * k);
  return t;
}

Tensor ones(const Shape& shape) {
  Tensor t(shape);
  for (int64_t k = 0; k < t.numel(); ++k) t.f32()[k] = 1.0f;
  return t;
}

// Runs one Dropout node with these attrs on x and seeds.
Tensor run_dropout(const Tensor& x, const Tensor& seeds, const Attrs& attrs) {
  Graph g;
  GraphBuilder gb(g);
  Value xv = gb.input("x", x.shape());
  Value sv = gb.input("seeds", seeds.shape(), DType::kI32);
  Value y = gb.op("Dropout", {xv, sv}, attrs, "drop");
  return run_graph(g, {y.id}, {{xv.id, x}, {sv.id, seeds}})[0];
}

Attrs with_p(double p, int64_t salt = 7) { return {{"p", p}, {"salt", salt}}; }

// The kept positions of a dropout output of ones.
std::vector<int> mask_of(const Tensor& y) {
  std::vector<int> m(static_cast<size_t>(y.numel()));
  for (int64_t k = 0; k < y.numel(); ++k) m[k] = y.f32()[k] != 0.0f;
  return m;
}

// The fraction of positions where two masks differ.
double differing(const std::vector<int>& a, const std::vector<int>& b) {
  int64_t n = 0;
  for (size_t k = 0; k < a.size(); ++k) n += a[k] != b[k];
  return static_cast<double>(n) / static_cast<double>(a.size());
}

TEST(Dropout, ZeroPIsTheIdentity) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {3, 4, 5});
  Value seeds = gb.input("seeds", {3}, DType::kI32);
  Value y = gb.dropout(x, seeds, 0.0f);
  const Tensor xv = random_tensor({3, 4, 5}, 1);
  const Tensor got = run_graph(g, {y.id}, {{x.id, xv}, {seeds.id, seed_tensor(3)}})[0];
  EXPECT_EQ(got.to_vector(), xv.to_vector());
}

class DropoutRate : public ::testing::TestWithParam<double> {};

TEST_P(DropoutRate, KeepsOneMinusPAndScalesTheKeptValues) {
  const double p = GetParam();
  const Shape shape{100, 1000};  // 100k elements: the kept fraction's spread is under 0.2%
  const Tensor xv = random_tensor(shape, 2, 0.5f, 1.5f);
  const Tensor got = run_dropout(xv, seed_tensor(100), with_p(p));
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  int64_t kept = 0;
  for (int64_t k = 0; k < xv.numel(); ++k) {
    if (got.f32()[k] == 0.0f) continue;
    ++kept;
    ASSERT_EQ(got.f32()[k], xv.f32()[k] * scale) << "element " << k;
  }
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(xv.numel()), 1.0 - p, 0.01);
}

INSTANTIATE_TEST_SUITE_P(Rates, DropoutRate, ::testing::Values(0.1, 0.5, 0.9),
                         [](const auto& info) { return fmt::format("p{}", static_cast<int>(info.param * 10)); });

TEST(Dropout, TheMaskChangesWithTheSaltAndTheSeedOnly) {
  const Shape shape{4, 2000};
  const Tensor x = ones(shape), seeds = seed_tensor(4);
  const std::vector<int> base = mask_of(run_dropout(x, seeds, with_p(0.5, 7)));
  // Another site, or other seeds: about half the positions differ (2 p (1 - p) = 0.5).
  EXPECT_NEAR(differing(base, mask_of(run_dropout(x, seeds, with_p(0.5, 8)))), 0.5, 0.05);
  EXPECT_NEAR(differing(base, mask_of(run_dropout(x, seed_tensor(4, 1001), with_p(0.5, 7)))), 0.5, 0.05);
  // The same salt and seeds: the same mask, whatever the node is called.
  EXPECT_EQ(differing(base, mask_of(run_dropout(x, seeds, with_p(0.5, 7)))), 0.0);
  // Two samples of one seed share their mask: the sample's index in the batch plays no part.
  Tensor same = seeds.clone();
  same.i32()[3] = same.i32()[1];
  const std::vector<int> m = mask_of(run_dropout(x, same, with_p(0.5, 7)));
  EXPECT_TRUE(std::equal(m.begin() + 2000, m.begin() + 4000, m.begin() + 6000));
  const std::vector<int> first(m.begin(), m.begin() + 2000), second(m.begin() + 2000, m.begin() + 4000);
  EXPECT_GT(differing(first, second), 0.4);
  // GraphBuilder salts each site from its name: two dropouts of one graph differ.
  Graph g;
  GraphBuilder gb(g);
  Value xv = gb.input("x", shape);
  Value sv = gb.input("seeds", {4}, DType::kI32);
  Value y1 = gb.dropout(xv, sv, 0.5f), y2 = gb.dropout(xv, sv, 0.5f);
  EXPECT_NE(g.node(y1.id).attrs.get_int("salt"), g.node(y2.id).attrs.get_int("salt"));
  const std::vector<Tensor> got = run_graph(g, {y1.id, y2.id}, {{xv.id, x}, {sv.id, seeds}});
  EXPECT_NEAR(differing(mask_of(got[0]), mask_of(got[1])), 0.5, 0.05);
}

// One block of x: its offsets and shape, and x's batch axis.
struct BlockCase {
  std::string name;
  int64_t batch_axis;
  std::vector<int64_t> offsets;
  Shape block;
};

void PrintTo(const BlockCase& c, std::ostream* os) { *os << c.name; }

class DropoutBlock : public ::testing::TestWithParam<BlockCase> {};

TEST_P(DropoutBlock, EqualsTheSameBlockOfTheWholeMask) {
  const BlockCase& c = GetParam();
  const Shape whole{4, 6, 10};
  const Tensor x = random_tensor(whole, 3), seeds = seed_tensor(whole[c.batch_axis]);
  Attrs attrs = with_p(0.5);
  attrs.set("batch_axis", c.batch_axis);
  const Tensor want = run_dropout(x, seeds, attrs);
  // The block of x and its samples' seeds.
  Tensor xb(c.block), sb({c.block[c.batch_axis]}, DType::kI32);
  auto whole_index = [&](int64_t k) {
    int64_t rest = k, flat = 0, stride = 1;
    for (int d = 2; d >= 0; --d) {
      flat += (rest % c.block[d] + c.offsets[d]) * stride;
      rest /= c.block[d];
      stride *= whole[d];
    }
    return flat;
  };
  for (int64_t k = 0; k < xb.numel(); ++k) xb.f32()[k] = x.f32()[whole_index(k)];
  for (int64_t i = 0; i < sb.numel(); ++i) sb.i32()[i] = seeds.i32()[c.offsets[c.batch_axis] + i];
  attrs.set("offsets", c.offsets);
  attrs.set("global_shape", whole);
  const Tensor got = run_dropout(xb, sb, attrs);
  int64_t kept = 0;
  for (int64_t k = 0; k < got.numel(); ++k) {
    ASSERT_EQ(got.f32()[k], want.f32()[whole_index(k)]) << "block element " << k;
    kept += got.f32()[k] != 0.0f;
  }
  // Some kept, some dropped: an all-zero block would equal anything.
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, got.numel());
}

INSTANTIATE_TEST_SUITE_P(
    Blocks, DropoutBlock,
    ::testing::Values(BlockCase{"batch", 0, {2, 0, 0}, {2, 6, 10}}, BlockCase{"sequence", 0, {0, 3, 0}, {4, 3, 10}},
                      BlockCase{"hidden", 0, {0, 0, 5}, {4, 6, 5}}, BlockCase{"every_dim", 0, {1, 2, 4}, {2, 3, 4}},
                      BlockCase{"batch_axis_1_every_dim", 1, {1, 2, 4}, {2, 3, 4}},
                      BlockCase{"batch_axis_2_last_dim", 2, {0, 3, 5}, {4, 2, 5}}),
    [](const auto& info) { return info.param.name; });

TEST(Dropout, GradientMatchesFiniteDifferences) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {3, 4, 5});
  Value seeds = gb.input("seeds", {4}, DType::kI32);
  Value y = gb.dropout(x, seeds, 0.4f, 1);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({3, 4, 5}, 4)}, {seeds.id, seed_tensor(4)}}, {x.id}));
}

TEST(Dropout, BadAttrsAndInputsAreRefusedNamingTheNode) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});
  Value seeds = gb.input("seeds", {2}, DType::kI32);
  Value three = gb.input("three", {3}, DType::kI32);
  Value fseeds = gb.input("fseeds", {2});
  auto refused = [&](std::vector<Value> in, Attrs attrs, const std::string& what) {
    EXPECT_THAT([&] { gb.op("Dropout", std::move(in), std::move(attrs), "drop"); },
                ::testing::Throws<Error>(::testing::Property(&Error::what, ::testing::HasSubstr(what))))
        << what;
  };
  refused({x, seeds}, {{"p", 1.0}}, "Dropout 'drop': p must lie in [0, 1), got 1");
  refused({x, seeds}, {{"p", -0.1}}, "p must lie in [0, 1)");
  refused({x, three}, {}, "Dropout 'drop': seeds must be i32 (2,)");
  refused({x, fseeds}, {}, "seeds must be i32");
  refused({x, three}, {{"batch_axis", int64_t{1}}, {"offsets", std::vector<int64_t>{0}}},
          "offsets (0) and global_shape (2, 3) must have one entry per dim");
  refused({x, seeds}, {{"batch_axis", int64_t{2}}}, "batch_axis 2 out of range");
  refused({x, seeds}, {{"offsets", std::vector<int64_t>{0, 2}}, {"global_shape", std::vector<int64_t>{2, 4}}},
          "the block of shape (2, 3) at offsets (0,2) must lie within global_shape (2, 4) (dim 1)");
}

// ---- CausalMask ----

struct MaskCase {
  int64_t q_offset, k_offset;
};

std::string mask_case_name(const MaskCase& c) { return fmt::format("q{}_k{}", c.q_offset, c.k_offset); }

void PrintTo(const MaskCase& c, std::ostream* os) { *os << "q_offset " << c.q_offset << ", k_offset " << c.k_offset; }

class CausalMaskOffsets : public ::testing::TestWithParam<MaskCase> {};

TEST_P(CausalMaskOffsets, MatchesAHandLoop) {
  const MaskCase& c = GetParam();
  const Shape shape{2, 3, 4, 5};
  Graph g;
  GraphBuilder gb(g);
  Value s = gb.input("scores", shape);
  Value y = gb.op("CausalMask", {s}, {{"q_offset", c.q_offset}, {"k_offset", c.k_offset}});
  const Tensor sv = random_tensor(shape, 5);
  const Tensor got = run_graph(g, {y.id}, {{s.id, sv}})[0];
  int64_t masked = 0;
  for (int64_t k = 0; k < sv.numel(); ++k) {
    const int64_t ki = k % 5, qi = k / 5 % 4;
    const bool future = c.k_offset + ki > c.q_offset + qi;
    masked += future;
    ASSERT_EQ(got.f32()[k], future ? -1e9f : sv.f32()[k]) << "element " << k;
  }
  if (c.q_offset < c.k_offset + 4) {
    EXPECT_GT(masked, 0);  // the case masks something
  }
}

INSTANTIATE_TEST_SUITE_P(Offsets, CausalMaskOffsets,
                         ::testing::Values(MaskCase{0, 0}, MaskCase{2, 0}, MaskCase{0, 3}, MaskCase{4, 2},
                                           MaskCase{9, 0}),
                         [](const auto& info) { return mask_case_name(info.param); });

TEST(CausalMask, SoftmaxAfterItHasExactZerosAboveTheDiagonalAndNoNaN) {
  const Shape shape{2, 3, 6, 6};
  Graph g;
  GraphBuilder gb(g);
  Value s = gb.input("scores", shape);
  Value y = gb.softmax(gb.causal_mask(s));
  const Tensor got = run_graph(g, {y.id}, {{s.id, random_tensor(shape, 6, -30.0f, 30.0f)}})[0];
  for (int64_t row = 0; row < got.numel() / 6; ++row) {
    const int64_t qi = row % 6;
    double sum = 0;
    for (int64_t ki = 0; ki < 6; ++ki) {
      const float v = got.f32()[row * 6 + ki];
      ASSERT_FALSE(std::isnan(v)) << "row " << row << " key " << ki;
      if (ki > qi) {
        ASSERT_EQ(v, 0.0f) << "row " << row << " key " << ki;
      }
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-6) << "row " << row;
  }
}

TEST(CausalMask, GradientMatchesFiniteDifferences) {
  // Through a softmax (the mask's use; its default fill), and alone with a small fill that keeps
  // the checker's weighted sum precise: the gradient does not depend on the fill.
  const Shape shape{2, 2, 4, 5};
  {
    Graph g;
    GraphBuilder gb(g);
    Value s = gb.parameter("scores", shape);
    Value y = gb.softmax(gb.op("CausalMask", {s}, {{"q_offset", int64_t{1}}}));
    EXPECT_TRUE(check_gradients(g, y.id, {{s.id, random_tensor(shape, 7, -2.0f, 2.0f)}}, {s.id}));
  }
  Graph g;
  GraphBuilder gb(g);
  Value s = gb.parameter("scores", shape);
  Value y = gb.op("CausalMask", {s}, {{"fill", -3.0}, {"k_offset", int64_t{1}}});
  EXPECT_TRUE(check_gradients(g, y.id, {{s.id, random_tensor(shape, 8)}}, {s.id}));
}

TEST(CausalMask, BadInputsAreRefusedNamingTheNode) {
  Graph g;
  GraphBuilder gb(g);
  Value vec = gb.input("vec", {5});
  Value ints = gb.input("ints", {4, 4}, DType::kI32);
  Value x = gb.input("x", {4, 4});
  EXPECT_THAT([&] { gb.op("CausalMask", {vec}, {}, "cm"); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("CausalMask 'cm': scores must be f32")));
  EXPECT_THAT([&] { gb.op("CausalMask", {ints}, {}, "cm1"); },
              ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("of rank >= 2, got i32(4, 4)")));
  EXPECT_THAT([&] { gb.op("CausalMask", {x}, {{"q_offset", int64_t{-1}}}, "cm2"); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  ::testing::HasSubstr("CausalMask 'cm2': q_offset -1 and k_offset 0 must be >= 0")));
  EXPECT_THAT([&] { gb.op("CausalMask", {x}, {{"fill", std::nan("")}}, "cm3"); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("fill must not be NaN")));
}

}  // namespace
}  // namespace sf
