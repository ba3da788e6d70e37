// The local ops of a cross-entropy over a split vocabulary (CrossEntropyShardMax,
// CrossEntropyShardSums, CrossEntropyFromSums) and SoftmaxCrossEntropy's `classes`:
//   - each op against a hand loop, padding columns and a block of padding only included;
//   - class blocks computed separately and combined by hand (max, then sums) equal the whole
//     op, loss and gradient, which is what the sharding rule's AllReduces do;
//   - finite-difference gradients of each op and of the three chained;
//   - a padded vocabulary (C = 120, classes = 114) gives exactly the loss and gradient of the
//     unpadded (N, 114) logits, with padding values large enough to dominate if counted;
//   - labels past the real classes and a `classes` past the columns are refused, in one line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include "tests/ops/grad_check.h"

namespace sf {
namespace {

using optest::check_gradients;
using optest::random_tensor;
using optest::run_graph;

Tensor labels_of(const std::vector<int32_t>& l) { return Tensor::from_vector({static_cast<int64_t>(l.size())}, l); }

// Columns [from, to) of x (N, C).
Tensor columns(const Tensor& x, int64_t from, int64_t to) {
  Tensor out({x.dim(0), to - from});
  for (int64_t r = 0; r < x.dim(0); ++r)
    for (int64_t c = from; c < to; ++c) out.f32()[r * (to - from) + c - from] = x.f32()[r * x.dim(1) + c];
  return out;
}

Attrs block(int64_t offset, int64_t classes) { return {{"offset", offset}, {"classes", classes}}; }

// Runs one op on the given inputs (f32 unless a tensor says otherwise) and returns its value.
Tensor run_op(const std::string& op, const std::vector<Tensor>& in, const Attrs& attrs = {}) {
  Graph g;
  GraphBuilder b(g);
  std::vector<Value> values;
  std::vector<optest::Binding> bindings;
  for (size_t i = 0; i < in.size(); ++i) {
    values.push_back(b.input("in" + std::to_string(i), in[i].shape(), in[i].dtype()));
    bindings.push_back({values.back().id, in[i]});
  }
  const Value y = b.op(op, values, attrs, "op");
  return run_graph(g, {y.id}, bindings)[0];
}

TEST(ShardedCrossEntropy, ShardMaxIsTheMaxOverTheRealColumns) {
  // Block of columns [8, 12) of a vocabulary of 10 classes: columns 2 and 3 are padding.
  const Tensor x = optest::floats({2, 4}, {1.f, -2.f, 9.f, 9.f, -3.f, -1.f, 7.f, 8.f});
  const std::vector<float> got = run_op("CrossEntropyShardMax", {x}, block(8, 10)).to_vector();
  EXPECT_THAT(got, ::testing::ElementsAre(1.f, -1.f));
  // A block of padding only: the lowest finite float, which any real max beats.
  const std::vector<float> none = run_op("CrossEntropyShardMax", {x}, block(12, 10)).to_vector();
  EXPECT_THAT(none, ::testing::Each(std::numeric_limits<float>::lowest()));
}

TEST(ShardedCrossEntropy, ShardSumsMatchAHandLoop) {
  const int64_t rows = 3, cols = 5, offset = 5, classes = 8;  // columns 3 and 4 are padding
  const Tensor x = random_tensor({rows, cols}, 4, -2.f, 2.f), m = optest::floats({rows}, {1.f, 0.5f, -0.5f});
  const std::vector<int32_t> labels{6, 2, 5};  // in the block, before it, its first column
  const Tensor got = run_op("CrossEntropyShardSums", {x, labels_of(labels), m}, block(offset, classes));
  ASSERT_EQ(got.shape(), (Shape{rows, 2}));
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < classes - offset; ++c) sum += std::exp(x.f32()[r * cols + c] - m.f32()[r]);
    const int64_t l = labels[r] - offset;
    const float picked = l >= 0 && l < cols ? x.f32()[r * cols + l] : 0.f;
    EXPECT_NEAR(got.f32()[r * 2], sum, 1e-6 * sum) << "row " << r;
    EXPECT_EQ(got.f32()[r * 2 + 1], picked) << "row " << r;
  }
}

TEST(ShardedCrossEntropy, FromSumsMatchesAHandLoop) {
  const Tensor sums = optest::floats({2, 2}, {3.f, 1.5f, 0.5f, -2.f}), m = optest::floats({2}, {0.25f, 1.f});
  const float want = static_cast<float>((std::log(3.0) + 0.25 - 1.5 + std::log(0.5) + 1.0 + 2.0) / 2);
  EXPECT_NEAR(run_op("CrossEntropyFromSums", {sums, m}).item(), want, 1e-6);
  const Tensor dsums = run_op("CrossEntropyFromSumsGrad", {sums, optest::floats({}, {2.f})});
  EXPECT_THAT(dsums.to_vector(), ::testing::Pointwise(::testing::FloatNear(1e-7f),
                                                      std::vector<float>{1.f / 3, -1.f, 2.f, -1.f}));
}

// Three blocks of 4 columns over a vocabulary of 10 classes padded to 12, reduced by hand as
// the AllReduces would, against the whole op: loss and gradient.
TEST(ShardedCrossEntropy, BlocksCombinedByHandEqualTheWholeOp) {
  const int64_t rows = 6, cols = 12, classes = 10, width = 4;
  const Tensor x = random_tensor({rows, cols}, 7, -3.f, 3.f);
  const Tensor labels = labels_of({0, 3, 4, 9, 8, 5});
  std::vector<Tensor> blocks;
  for (int64_t k = 0; k < cols / width; ++k) blocks.push_back(columns(x, k * width, (k + 1) * width));

  Tensor m({rows});
  std::fill_n(m.f32(), rows, std::numeric_limits<float>::lowest());
  for (int64_t k = 0; k < 3; ++k) {
    const Tensor bm = run_op("CrossEntropyShardMax", {blocks[k]}, block(k * width, classes));
    for (int64_t r = 0; r < rows; ++r) m.f32()[r] = std::max(m.f32()[r], bm.f32()[r]);
  }
  Tensor sums({rows, 2});
  std::fill_n(sums.f32(), rows * 2, 0.f);
  for (int64_t k = 0; k < 3; ++k) {
    const Tensor bs = run_op("CrossEntropyShardSums", {blocks[k], labels, m}, block(k * width, classes));
    for (int64_t i = 0; i < rows * 2; ++i) sums.f32()[i] += bs.f32()[i];
  }
  const float loss = run_op("CrossEntropyFromSums", {sums, m}).item();
  const Tensor one = optest::floats({}, {1.f});
  const Tensor dsums = run_op("CrossEntropyFromSumsGrad", {sums, one});

  const Attrs whole{{"classes", classes}};
  EXPECT_NEAR(loss, run_op("SoftmaxCrossEntropy", {x, labels}, whole).item(), 1e-6);
  const Tensor want = run_op("SoftmaxCrossEntropyGrad", {x, labels, one}, whole);
  for (int64_t k = 0; k < 3; ++k) {
    const Tensor got = run_op("CrossEntropyShardSumsGrad", {blocks[k], labels, m, dsums}, block(k * width, classes));
    const Tensor w = columns(want, k * width, (k + 1) * width);
    EXPECT_THAT(got.to_vector(), ::testing::Pointwise(::testing::FloatNear(1e-7f), w.to_vector())) << "block " << k;
  }
}

TEST(ShardedCrossEntropy, ShardSumsGradientsMatchFiniteDifferences) {
  Graph g;
  GraphBuilder b(g);
  const Value x = b.parameter("x", {4, 6}), labels = b.input("labels", {4}, DType::kI32), m = b.input("m", {4});
  // Block [6, 12) of 10 classes: the last two columns are padding and must get no gradient.
  const Value sums = b.op("CrossEntropyShardSums", {x, labels, m}, block(6, 10));
  EXPECT_TRUE(check_gradients(g, sums.id,
                              {{x.id, random_tensor({4, 6}, 2, -2.f, 2.f)},
                               {labels.id, labels_of({6, 1, 9, 7})},
                               {m.id, optest::floats({4}, {0.5f, 1.f, -1.f, 0.f})}},
                              {x.id}));
}

TEST(ShardedCrossEntropy, FromSumsGradientsMatchFiniteDifferences) {
  Graph g;
  GraphBuilder b(g);
  const Value sums = b.parameter("sums", {3, 2}), m = b.input("m", {3});
  const Value loss = b.op("CrossEntropyFromSums", {sums, m});
  EXPECT_TRUE(check_gradients(g, loss.id, {{sums.id, random_tensor({3, 2}, 5, 0.5f, 2.f)},
                                           {m.id, optest::floats({3}, {0.5f, 1.f, -1.f})}},
                              {sums.id}));
}

// The three ops chained on one block holding every class, differentiated through autodiff: the
// max gets no gradient and the result is still the loss's exact gradient.
TEST(ShardedCrossEntropy, ChainedOpsGradientsMatchFiniteDifferences) {
  Graph g;
  GraphBuilder b(g);
  const Value x = b.parameter("x", {4, 7}), labels = b.input("labels", {4}, DType::kI32);
  const Attrs attrs = block(0, 5);  // columns 5 and 6 are padding
  const Value m = b.op("CrossEntropyShardMax", {x}, attrs);
  const Value sums = b.op("CrossEntropyShardSums", {x, labels, m}, attrs);
  const Value loss = b.op("CrossEntropyFromSums", {sums, m});
  EXPECT_TRUE(check_gradients(g, loss.id,
                              {{x.id, random_tensor({4, 7}, 9, -2.f, 2.f)}, {labels.id, labels_of({0, 4, 2, 2})}},
                              {x.id}));
  const std::vector<int> grads = gradients(g, b.reduce_sum(m).id, {x.id});
  EXPECT_EQ(g.node(grads[0]).op, "Fill");  // the max alone has no gradient: zeros
}

// A padded vocabulary: the loss and gradient of (N, 120) logits with classes = 114 are exactly
// those of the (N, 114) logits without the padding, whose values (50) would dominate if counted.
TEST(ShardedCrossEntropy, PaddedVocabularyEqualsTheUnpaddedOneExactly) {
  const int64_t rows = 5, cols = 120, classes = 114;
  Tensor padded = random_tensor({rows, cols}, 3, -4.f, 4.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = classes; c < cols; ++c) padded.f32()[r * cols + c] = 50.f;
  const Tensor unpadded = columns(padded, 0, classes);
  const Tensor labels = labels_of({0, 113, 57, 100, 1});
  const Tensor one = optest::floats({}, {1.f});

  const auto loss_and_grad = [&](const Tensor& x, int64_t c) {
    Graph g;
    GraphBuilder b(g);
    const Value xv = b.input("x", x.shape()), lv = b.input("labels", {rows}, DType::kI32);
    const Value loss = b.softmax_cross_entropy(xv, lv, c);
    const Value grad = b.op("SoftmaxCrossEntropyGrad", {xv, lv, b.fill({}, 1.f)}, g.node(loss.id).attrs);
    return run_graph(g, {loss.id, grad.id}, {{xv.id, x}, {lv.id, labels}});
  };
  const std::vector<Tensor> p = loss_and_grad(padded, classes), u = loss_and_grad(unpadded, -1);
  EXPECT_EQ(p[0].item(), u[0].item());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < classes; ++c)
      ASSERT_EQ(p[1].f32()[r * cols + c], u[1].f32()[r * classes + c]) << "row " << r << " column " << c;
    for (int64_t c = classes; c < cols; ++c) ASSERT_EQ(p[1].f32()[r * cols + c], 0.f) << "padding " << r << ", " << c;
  }
  // Autodiff passes the attr on to the gradient.
  Graph g;
  GraphBuilder b(g);
  const Value xv = b.parameter("x", {rows, cols}), lv = b.input("labels", {rows}, DType::kI32);
  const Value loss = b.softmax_cross_entropy(xv, lv, classes);
  EXPECT_EQ(g.node(gradients(g, loss.id, {xv.id})[0]).attrs.get_int("classes"), classes);
}

TEST(ShardedCrossEntropy, RefusesALabelPastTheRealClasses) {
  Graph g;
  GraphBuilder b(g);
  const Value x = b.input("x", {3, 8}), labels = b.input("labels", {3}, DType::kI32);
  const Value loss = b.op("SoftmaxCrossEntropy", {x, labels}, {{"classes", int64_t{6}}}, "loss");
  EXPECT_THAT([&] { run_graph(g, {loss.id}, {{x.id, random_tensor({3, 8}, 1)}, {labels.id, labels_of({0, 6, 2})}}); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  ::testing::HasSubstr("SoftmaxCrossEntropy 'loss': label 6 of row 1 is out of range [0, 6)")));
  // A block op refuses it too, even when the label would fall in its columns.
  const std::vector<Tensor> in{random_tensor({3, 4}, 1), labels_of({0, 6, 2}), optest::floats({3}, {0.f, 0.f, 0.f})};
  EXPECT_THAT([&] { run_op("CrossEntropyShardSums", in, block(4, 6)); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("label 6 of row 1 is out of range [0, 6)")));
  EXPECT_THAT([&] { b.op("SoftmaxCrossEntropy", {x, labels}, {{"classes", int64_t{9}}}, "wide"); },
              ::testing::ThrowsMessage<InvalidArgument>(
                  ::testing::HasSubstr("SoftmaxCrossEntropy 'wide': classes 9 must be in [1, 8]")));
}

}  // namespace
}  // namespace sf
