// EmbeddingLookup and EmbeddingLookupGrad: the lookup against a hand loop for ids of rank 0 to
// 3, a table that holds only some rows of the vocabulary (offset, vocab) giving zeros for the
// others, the refusal of an id outside the vocabulary naming it and its position, the table's
// gradient by finite differences with repeated ids and on a partial table, the scatter-add
// kernel against a hand loop, and the refusals of mismatched inputs.
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

// i32 tensor of `shape` whose values are (7 * k + 3) mod vocab: every id in range, some repeated.
Tensor id_tensor(const Shape& shape, int32_t vocab) {
  Tensor t(shape, DType::kI32);
  for (int64_t k = 0; k < t.numel(); ++k) t.i32()[k] = static_cast<int32_t>((7 * k + 3) % vocab);
  return t;
}

Shape with_hidden(Shape s, int64_t h) {
  s.push_back(h);
  return s;
}

// The lookup of a table holding rows [offset, offset + R) of the vocabulary, in a plain loop.
Tensor reference_lookup(const Tensor& table, const Tensor& ids, int64_t offset) {
  const int64_t rows = table.dim(0), h = table.dim(1);
  Tensor out(with_hidden(ids.shape(), h));
  for (int64_t p = 0; p < ids.numel(); ++p)
    for (int64_t k = 0; k < h; ++k) {
      const int64_t r = ids.i32()[p] - offset;
      out.f32()[p * h + k] = r >= 0 && r < rows ? table.f32()[r * h + k] : 0.0f;
    }
  return out;
}

class EmbeddingShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(EmbeddingShapes, LookupMatchesAHandLoop) {
  const Shape& ids_shape = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value table = gb.input("table", {11, 5});
  Value ids = gb.input("ids", ids_shape, DType::kI32);
  Value y = gb.embedding(table, ids);
  EXPECT_EQ(gb.shape(y), with_hidden(ids_shape, 5));
  const Tensor tv = random_tensor({11, 5}, 1), iv = id_tensor(ids_shape, 11);
  const Tensor got = run_graph(g, {y.id}, {{table.id, tv}, {ids.id, iv}})[0];
  const Tensor want = reference_lookup(tv, iv, 0);
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.f32()[i], want.f32()[i]) << "element " << i;
}

TEST_P(EmbeddingShapes, TableGradientMatchesFiniteDifferences) {
  // 7k + 3 mod 4 repeats every id: each row's gradient is the sum over its occurrences.
  const Shape& ids_shape = GetParam();
  Graph g;
  GraphBuilder gb(g);
  Value table = gb.parameter("table", {4, 3});
  Value ids = gb.input("ids", ids_shape, DType::kI32);
  Value y = gb.embedding(table, ids);
  EXPECT_TRUE(check_gradients(g, y.id, {{table.id, random_tensor({4, 3}, 2)}, {ids.id, id_tensor(ids_shape, 4)}},
                              {table.id}));
}

INSTANTIATE_TEST_SUITE_P(Ids, EmbeddingShapes,
                         ::testing::Values(Shape{}, Shape{1}, Shape{6}, Shape{3, 4}, Shape{2, 3, 5}),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("scalar")
                                                     : fmt::format("{}", fmt::join(info.param, "x"));
                         });

TEST(Embedding, KnownValues) {
  // table rows [0, 1], [10, 11], [20, 21]; ids [[2, 0], [2, 1]].
  Graph g;
  GraphBuilder gb(g);
  Value table = gb.input("table", {3, 2});
  Value ids = gb.input("ids", {2, 2}, DType::kI32);
  Value y = gb.embedding(table, ids);
  const Tensor got =
      run_graph(g, {y.id}, {{table.id, Tensor::from_vector({3, 2}, std::vector<float>{0, 1, 10, 11, 20, 21})},
                            {ids.id, Tensor::from_vector({2, 2}, std::vector<int32_t>{2, 0, 2, 1})}})[0];
  EXPECT_EQ(got.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(got.to_vector(), (std::vector<float>{20, 21, 0, 1, 20, 21, 10, 11}));
}

TEST(Embedding, APartialTableLooksUpItsOwnRowsAndZerosTheOthers) {
  // Rows [4, 8) of a vocabulary of 12, as rank 1 of 3 holds them under a vocabulary split.
  Graph g;
  GraphBuilder gb(g);
  Value table = gb.input("table", {4, 3});
  Value ids = gb.input("ids", {3, 4}, DType::kI32);
  Value y = gb.op("EmbeddingLookup", {table, ids}, {{"offset", int64_t{4}}, {"vocab", int64_t{12}}}, "wte");
  const Tensor tv = random_tensor({4, 3}, 3);
  const Tensor iv = Tensor::from_vector({3, 4}, std::vector<int32_t>{0, 3, 4, 5, 7, 8, 11, 6, 4, 2, 9, 7});
  const Tensor got = run_graph(g, {y.id}, {{table.id, tv}, {ids.id, iv}})[0];
  const Tensor want = reference_lookup(tv, iv, 4);
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(got.f32()[i], want.f32()[i]) << "element " << i;
  // Position 0 (id 0) is another rank's row: zeros; position 2 (id 4) is local row 0.
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_EQ(got.f32()[k], 0.0f);
    EXPECT_EQ(got.f32()[2 * 3 + k], tv.f32()[k]);
  }
}

TEST(Embedding, PartialTableGradientMatchesFiniteDifferences) {
  // Only the ids in [3, 6) reach the table; the others add nothing.
  Graph g;
  GraphBuilder gb(g);
  Value table = gb.parameter("table", {3, 4});
  Value ids = gb.input("ids", {2, 5}, DType::kI32);
  Value y = gb.op("EmbeddingLookup", {table, ids}, {{"offset", int64_t{3}}, {"vocab", int64_t{9}}});
  EXPECT_TRUE(check_gradients(g, y.id, {{table.id, random_tensor({3, 4}, 4)}, {ids.id, id_tensor({2, 5}, 9)}},
                              {table.id}));
}

TEST(Embedding, GradKernelScatterAddsDoutRowsIntoTheirIds) {
  // Every occurrence of an id adds its dout row: id 5 appears three times.
  const Shape ids_shape{2, 4};
  const Tensor iv = Tensor::from_vector(ids_shape, std::vector<int32_t>{5, 2, 5, 9, 0, 5, 3, 4});
  const Tensor dv = random_tensor({2, 4, 3}, 5);
  Graph g;
  GraphBuilder gb(g);
  Value ids = gb.input("ids", ids_shape, DType::kI32);
  Value dout = gb.input("dout", {2, 4, 3});
  Value dt = gb.op("EmbeddingLookupGrad", {ids, dout}, {{"rows", int64_t{4}}, {"offset", int64_t{2}}});
  EXPECT_EQ(gb.shape(dt), (Shape{4, 3}));
  const Tensor got = run_graph(g, {dt.id}, {{ids.id, iv}, {dout.id, dv}})[0];
  std::vector<double> want(12, 0.0);
  for (int64_t p = 0; p < iv.numel(); ++p) {
    const int64_t r = iv.i32()[p] - 2;
    if (r < 0 || r >= 4) continue;
    for (int64_t k = 0; k < 3; ++k) want[r * 3 + k] += dv.f32()[p * 3 + k];
  }
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.f32()[i], want[i], 1e-6) << "element " << i;
  // Row 3 (id 5) holds three rows' sum; row 1 (id 3) one row's.
  EXPECT_NEAR(got.f32()[3 * 3], dv.f32()[0] + dv.f32()[2 * 3] + dv.f32()[5 * 3], 1e-6);
  EXPECT_EQ(got.f32()[1 * 3], dv.f32()[6 * 3]);
}

TEST(Embedding, AnIdOutsideTheVocabularyIsRefusedNamingItAndItsPosition) {
  Graph g;
  GraphBuilder gb(g);
  Value table = gb.input("table", {4, 2});
  Value ids = gb.input("ids", {3, 6}, DType::kI32);
  Value y = gb.op("EmbeddingLookup", {table, ids}, {{"offset", int64_t{8}}, {"vocab", int64_t{114}}}, "wte");
  std::vector<int32_t> iv(18, 9);
  iv[17] = 130;
  EXPECT_THAT(
      [&] {
        run_graph(g, {y.id}, {{table.id, random_tensor({4, 2}, 6)}, {ids.id, Tensor::from_vector({3, 6}, iv)}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          ::testing::HasSubstr("EmbeddingLookup 'wte': id 130 at position 17 is outside the vocabulary [0, 114)")));
  iv[17] = 9;
  iv[4] = -1;
  EXPECT_THAT(
      [&] {
        run_graph(g, {y.id}, {{table.id, random_tensor({4, 2}, 6)}, {ids.id, Tensor::from_vector({3, 6}, iv)}});
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          ::testing::HasSubstr("id -1 at position 4 is outside the vocabulary [0, 114)")));
}

TEST(Embedding, BadInputsAreRefusedNamingTheNode) {
  Graph g;
  GraphBuilder gb(g);
  Value table = gb.input("table", {4, 2});
  Value ids = gb.input("ids", {3}, DType::kI32);
  Value fids = gb.input("fids", {3});
  Value flat = gb.input("flat", {8});
  Value dout = gb.input("dout", {3, 2});
  Value bad_dout = gb.input("bad_dout", {2, 2});
  EXPECT_THAT(
      [&] {
        gb.op("EmbeddingLookup", {flat, ids}, {}, "e0");
      },
      ::testing::ThrowsMessage<ShapeError>(
          ::testing::HasSubstr("EmbeddingLookup 'e0': table must be f32 (rows, hidden)")));
  EXPECT_THAT(
      [&] {
        gb.op("EmbeddingLookup", {table, fids}, {}, "e1");
      },
      ::testing::ThrowsMessage<ShapeError>(::testing::HasSubstr("EmbeddingLookup 'e1': ids must be i32")));
  EXPECT_THAT(
      [&] {
        gb.op("EmbeddingLookup", {table, ids}, {{"offset", int64_t{2}}, {"vocab", int64_t{5}}}, "e2");
      },
      ::testing::ThrowsMessage<InvalidArgument>(
          ::testing::HasSubstr("EmbeddingLookup 'e2': the table's rows [2, 6) must lie within the vocabulary [0, 5)")));
  EXPECT_THAT(
      [&] {
        gb.op("EmbeddingLookupGrad", {ids, dout}, {}, "g0");
      },
      ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("EmbeddingLookupGrad 'g0': attr rows")));
  EXPECT_THAT(
      [&] {
        gb.op("EmbeddingLookupGrad", {ids, bad_dout}, {{"rows", int64_t{4}}}, "g1");
      },
      ::testing::ThrowsMessage<ShapeError>(
          ::testing::HasSubstr("EmbeddingLookupGrad 'g1': dout must be f32 of ids' shape")));
}

}  // namespace
}  // namespace sf
