// Transpose: values against an index-by-index reference for permutations of rank 1 to 4 (the
// last dim moved or kept), i32 tensors, the gradient by finite differences (the inverse
// permutation), and the refusals of bad permutations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::iota;
using optest::random_tensor;
using optest::run_graph;

struct TransposeCase {
  Shape shape;
  std::vector<int64_t> perm;
};

void PrintTo(const TransposeCase& c, std::ostream* os) {
  *os << fmt::format("x ({}), perm ({})", fmt::join(c.shape, ", "), fmt::join(c.perm, ", "));
}

// out[i_0, ..., i_{r-1}] = x[j] with j[perm[d]] = i_d, by a full index walk.
Tensor reference_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  const Shape& xs = x.shape();
  const size_t r = xs.size();
  Shape os;
  for (int64_t p : perm) os.push_back(xs[p]);
  Tensor out(os);
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    std::vector<int64_t> idx(r), src(r);
    int64_t rest = flat;
    for (size_t d = r; d-- > 0;) {
      idx[d] = rest % os[d];
      rest /= os[d];
    }
    for (size_t d = 0; d < r; ++d) src[perm[d]] = idx[d];
    int64_t at = 0;
    for (size_t d = 0; d < r; ++d) at = at * xs[d] + src[d];
    out.f32()[flat] = x.f32()[at];
  }
  return out;
}

class TransposeTest : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(TransposeTest, MatchesAnIndexWalk) {
  const TransposeCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", c.shape);
  Value y = gb.transpose(x, c.perm);
  const Tensor xv = iota(c.shape);
  const Tensor got = run_graph(g, {y.id}, {{x.id, xv}})[0];
  const Tensor want = reference_transpose(xv, c.perm);
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(got.to_vector(), want.to_vector());
}

TEST_P(TransposeTest, GradientMatchesFiniteDifferences) {
  const TransposeCase& c = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", c.shape);
  Value y = gb.transpose(x, c.perm);
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor(c.shape, 2)}}, {x.id}));
}

INSTANTIATE_TEST_SUITE_P(Perms, TransposeTest,
                         ::testing::Values(TransposeCase{{5}, {0}}, TransposeCase{{3, 4}, {1, 0}},
                                           TransposeCase{{3, 4}, {0, 1}}, TransposeCase{{2, 3, 4}, {0, 2, 1}},
                                           TransposeCase{{2, 3, 4}, {2, 0, 1}}, TransposeCase{{2, 3, 4}, {1, 0, 2}},
                                           TransposeCase{{2, 4, 3, 5}, {0, 2, 1, 3}},  // attention's heads
                                           TransposeCase{{2, 4, 3, 5}, {3, 1, 2, 0}}),
                         [](const auto& info) {
                           return fmt::format("{}_perm{}", fmt::join(info.param.shape, "x"),
                                              fmt::join(info.param.perm, ""));
                         });

TEST(Transpose, KnownValuesOfAMatrix) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});
  Value y = gb.transpose(x, {1, 0});
  const Tensor got = run_graph(g, {y.id}, {{x.id, iota({2, 3})}})[0];
  EXPECT_EQ(got.shape(), (Shape{3, 2}));
  EXPECT_EQ(got.to_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Transpose, MovesI32Tensors) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 2}, DType::kI32);
  Value y = gb.transpose(x, {1, 0});
  EXPECT_EQ(g.node(y.id).dtype, DType::kI32);
  const Tensor got = run_graph(g, {y.id}, {{x.id, Tensor::from_vector({2, 2}, std::vector<int32_t>{1, 2, 3, 4})}})[0];
  EXPECT_EQ(std::vector<int32_t>(got.i32(), got.i32() + 4), (std::vector<int32_t>{1, 3, 2, 4}));
}

TEST(Transpose, GradientIsTheInversePermutation) {
  // perm (1, 2, 0) has inverse (2, 0, 1): dout (3, 4, 2) comes back as x's (2, 3, 4).
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.parameter("x", {2, 3, 4});
  Value y = gb.transpose(x, {1, 2, 0});
  EXPECT_EQ(gb.shape(y), (Shape{3, 4, 2}));
  EXPECT_TRUE(check_gradients(g, y.id, {{x.id, random_tensor({2, 3, 4}, 3)}}, {x.id}));
  bool found = false;
  for (int id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (n.op == "Transpose" && n.name.find("Gradients/") == 0) {
      EXPECT_EQ(n.attrs.get_ints("perm"), (std::vector<int64_t>{2, 0, 1}));
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(Transpose, BadPermutationsAreRefusedNamingTheNode) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3, 4});
  auto refused = [&](std::vector<int64_t> perm, const std::string& what) {
    EXPECT_THAT(
        [&] {
          gb.op("Transpose", {x}, {{"perm", perm}}, "tr");
        },
        ::testing::ThrowsMessage<ShapeError>(
            ::testing::AllOf(::testing::HasSubstr("Transpose 'tr': perm"), ::testing::HasSubstr(what))))
        << fmt::format("({})", fmt::join(perm, ", "));
  };
  refused({0, 1}, "must list each of x's 3 dims once");
  refused({0, 1, 2, 3}, "must list each of x's 3 dims once");
  refused({0, 1, 1}, "not a permutation of 0..2 (1 out of range or repeated)");
  refused({0, 1, 3}, "not a permutation of 0..2 (3 out of range or repeated)");
  refused({-1, 0, 1}, "not a permutation");
  EXPECT_THROW(gb.op("Transpose", {x}), ShapeError);  // no perm
  EXPECT_THAT(
      [&] {
        gb.op("Transpose", {x}, {{"perm", int64_t{1}}}, "tr1");
      },
      ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("Transpose 'tr1': attribute 'perm'")));
}

}  // namespace
}  // namespace sf
