// BatchIterator::skip (data/batch_iterator.h): after skip(k) the walk yields exactly the batches
// a walk that read k batches yields next, shuffled or not, including a short last batch; a
// count past the batches left is refused.
#include <shardflow/data/dataset.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

namespace sf::dataset {
namespace {

// 11 rows: "x" (2,) f32 = (i, -i) and "y" i32 = i.
Dataset rows11() {
  std::vector<float> x;
  for (int i = 0; i < 11; ++i) x.insert(x.end(), {static_cast<float>(i), static_cast<float>(-i)});
  std::vector<int32_t> y(11);
  std::iota(y.begin(), y.end(), 0);
  return Dataset::from_columns({"x", "y"}, {Tensor::from_vector({11, 2}, x), Tensor::from_vector({11}, y)});
}

// The rest of a walk: each batch's x and y values, in order.
std::vector<std::vector<float>> rest(BatchIterator& it) {
  std::vector<std::vector<float>> out;
  while (const std::vector<Tensor>* b = it.next()) {
    out.push_back((*b)[0].to_vector());
    for (int64_t i = 0; i < (*b)[1].numel(); ++i) out.back().push_back(static_cast<float>((*b)[1].i32()[i]));
  }
  return out;
}

TEST(BatchIteratorSkip, SkippingKBatchesYieldsWhatReadingKBatchesWouldHaveYieldedNext) {
  for (const Dataset& ds : {rows11().batch(3, false), rows11().shuffle(7).batch(3, false), rows11().shuffle(7)}) {
    for (int64_t k = 0; k <= ds.get_dataset_size(); ++k) {
      BatchIterator read = ds.iterator(2);
      for (int64_t i = 0; i < k; ++i) ASSERT_NE(read.next(), nullptr);
      BatchIterator skipped = ds.iterator(2);
      skipped.skip(k);
      EXPECT_EQ(skipped.batches_done(), k);
      EXPECT_EQ(rest(skipped), rest(read)) << "k = " << k;
    }
  }
}

TEST(BatchIteratorSkip, ACountPastTheBatchesLeftIsRefused) {
  BatchIterator it = rows11().batch(3).iterator();  // 3 batches
  ASSERT_NE(it.next(), nullptr);
  EXPECT_THAT([&] { it.skip(3); }, testing::ThrowsMessage<InvalidArgument>(
                                       testing::HasSubstr("count must be in [0, 2] (the batches left of 3), got 3")));
  EXPECT_THAT([&] { it.skip(-1); }, testing::ThrowsMessage<InvalidArgument>(testing::HasSubstr("got -1")));
  EXPECT_EQ(it.batches_done(), 1) << "a refused skip moves nothing";
}

}  // namespace
}  // namespace sf::dataset
