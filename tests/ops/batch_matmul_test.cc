// BatchMatMul: values against a triple loop per batch for every transpose_a / transpose_b pair
// on rank 3 and rank 4 inputs, finite-difference gradients of both inputs for each pair, and the
// refusals (ranks, batch dims, inner dims, dtypes).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::random_tensor;
using optest::run_graph;

struct BmmCase {
  Shape batch;
  int64_t m, k, n;
  bool ta, tb;
};

void PrintTo(const BmmCase& c, std::ostream* os) {
  *os << fmt::format("batch ({}) m {} k {} n {} ta {} tb {}", fmt::join(c.batch, ", "), c.m, c.k, c.n, c.ta, c.tb);
}

Shape with(const Shape& batch, int64_t x, int64_t y) {
  Shape s = batch;
  s.push_back(x);
  s.push_back(y);
  return s;
}
Shape a_shape(const BmmCase& c) { return c.ta ? with(c.batch, c.k, c.m) : with(c.batch, c.m, c.k); }
Shape b_shape(const BmmCase& c) { return c.tb ? with(c.batch, c.n, c.k) : with(c.batch, c.k, c.n); }

Tensor reference_bmm(const BmmCase& c, const Tensor& a, const Tensor& b) {
  Tensor out(with(c.batch, c.m, c.n));
  int64_t batches = 1;
  for (int64_t d : c.batch) batches *= d;
  for (int64_t t = 0; t < batches; ++t) {
    const float* pa = a.f32() + t * c.m * c.k;
    const float* pb = b.f32() + t * c.k * c.n;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < c.k; ++p)
          s += static_cast<double>(c.ta ? pa[p * c.m + i] : pa[i * c.k + p]) *
               (c.tb ? pb[j * c.k + p] : pb[p * c.n + j]);
        out.f32()[(t * c.m + i) * c.n + j] = static_cast<float>(s);
      }
  }
  return out;
}

class BatchMatMulTest : public ::testing::TestWithParam<BmmCase> {};

TEST_P(BatchMatMulTest, MatchesATripleLoopPerBatch) {
  const BmmCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("a", a_shape(c)), b = gb.input("b", b_shape(c));
  Value y = gb.batch_matmul(a, b, c.ta, c.tb);
  const Tensor av = random_tensor(a_shape(c), 1), bv = random_tensor(b_shape(c), 2);
  const Tensor got = run_graph(g, {y.id}, {{a.id, av}, {b.id, bv}})[0];
  const Tensor want = reference_bmm(c, av, bv);
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_NEAR(got.f32()[i], want.f32()[i], 1e-5) << "element " << i;
}

TEST_P(BatchMatMulTest, GradientsOfBothInputsMatchFiniteDifferences) {
  const BmmCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.parameter("a", a_shape(c)), b = gb.parameter("b", b_shape(c));
  Value y = gb.batch_matmul(a, b, c.ta, c.tb);
  EXPECT_TRUE(check_gradients(g, y.id, {{a.id, random_tensor(a_shape(c), 3)}, {b.id, random_tensor(b_shape(c), 4)}},
                              {a.id, b.id}));
}

std::vector<BmmCase> cases() {
  std::vector<BmmCase> out;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      out.push_back({{3}, 4, 5, 2, ta, tb});
      out.push_back({{2, 3}, 3, 4, 5, ta, tb});
    }
  out.push_back({{2}, 1, 7, 1, false, false});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, BatchMatMulTest, ::testing::ValuesIn(cases()), [](const auto& info) {
  const BmmCase& c = info.param;
  return fmt::format("b{}_m{}k{}n{}_ta{}_tb{}", fmt::join(c.batch, "x"), c.m, c.k, c.n, int{c.ta}, int{c.tb});
});

TEST(BatchMatMul, AttentionScoresAndContextGradients) {
  // softmax(q k^T) v on (batch 2, heads 2, seq 3, dim 4): each of q, k, v gets its gradient
  // through both products and the softmax.
  Graph g;
  GraphBuilder gb(g);
  const Shape s{2, 2, 3, 4};
  Value q = gb.parameter("q", s), k = gb.parameter("k", s), v = gb.parameter("v", s);
  Value y = gb.batch_matmul(gb.softmax(gb.batch_matmul(q, k, false, true)), v);
  EXPECT_EQ(gb.shape(y), s);
  EXPECT_TRUE(check_gradients(g, y.id,
                              {{q.id, random_tensor(s, 5)}, {k.id, random_tensor(s, 6)}, {v.id, random_tensor(s, 7)}},
                              {q.id, k.id, v.id}));
}

TEST(BatchMatMul, BadInputsAreRefusedNamingTheNode) {
  Graph g;
  GraphBuilder gb(g);
  Value a = gb.input("a", {2, 3, 4}), b = gb.input("b", {2, 4, 5});
  Value other_batch = gb.input("other_batch", {3, 4, 5}), flat = gb.input("flat", {3, 4});
  Value ints = gb.input("ints", {2, 4, 5}, DType::kI32), rank4 = gb.input("rank4", {1, 2, 4, 5});
  auto message = [](const std::string& s) { return ::testing::HasSubstr(s); };
  EXPECT_NO_THROW(gb.batch_matmul(a, b));
  EXPECT_THAT(
      [&] {
        gb.op("BatchMatMul", {a, other_batch}, {}, "bmm");
      },
      ::testing::ThrowsMessage<ShapeError>(message("BatchMatMul 'bmm': batch dims differ")));
  EXPECT_THAT(
      [&] {
        gb.op("BatchMatMul", {flat, flat}, {}, "bmm1");
      },
      ::testing::ThrowsMessage<ShapeError>(message("BatchMatMul 'bmm1': inputs must have the same rank >= 3")));
  EXPECT_THAT(
      [&] {
        gb.op("BatchMatMul", {a, rank4}, {}, "bmm2");
      },
      ::testing::ThrowsMessage<ShapeError>(message("same rank >= 3")));
  EXPECT_THAT(
      [&] {
        gb.op("BatchMatMul", {a, b}, {{"transpose_b", int64_t{1}}}, "bmm3");
      },
      ::testing::ThrowsMessage<ShapeError>(message("BatchMatMul 'bmm3': inner dimensions differ")));
  EXPECT_THAT(
      [&] {
        gb.op("BatchMatMul", {a, ints}, {}, "bmm4");
      },
      ::testing::ThrowsMessage<ShapeError>(message("BatchMatMul 'bmm4': inputs must be f32")));
}

}  // namespace
}  // namespace sf
