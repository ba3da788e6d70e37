// Tests for the dataset's epoch counter (data/dataset.h, data/epoch_counter.h): next_epoch()
// walks epoch after epoch (the shuffles of iterator(0), iterator(1), ...), copies share the
// count and derived datasets start anew, each reader keeps its own count, and set_epoch
// positions the walk.
#include <shardflow/data/dataset.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace sf::dataset {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// 12 rows of label i, shuffled, in batches of 12: one batch, the epoch's row order.
Dataset shuffled(int64_t n = 12) {
  std::vector<int32_t> y(n);
  std::iota(y.begin(), y.end(), 0);
  return Dataset::from_columns({"y"}, {Tensor::from_vector({n}, y)}).shuffle(7).batch(n);
}

std::vector<int32_t> order(BatchIterator it) {
  const Tensor& t = (*it.next())[0];
  return std::vector<int32_t>(t.i32(), t.i32() + t.numel());
}

TEST(EpochCounter, NextEpochWalksEpochAfterEpoch) {
  const Dataset ds = shuffled();
  EXPECT_EQ(ds.epoch(), 0);
  EXPECT_EQ(order(ds.next_epoch()), order(ds.iterator(0)));
  EXPECT_EQ(ds.epoch(), 1);
  EXPECT_EQ(order(ds.next_epoch()), order(ds.iterator(1)));
  EXPECT_NE(order(ds.iterator(0)), order(ds.iterator(1))) << "the shuffle differs by epoch";
  EXPECT_EQ(ds.epoch(), 2);
  (void)ds.iterator(5);  // an explicit epoch leaves the counter alone
  EXPECT_EQ(ds.epoch(), 2);
}

TEST(EpochCounter, CopiesShareItAndDerivedDatasetsStartAtZero) {
  const Dataset ds = shuffled();
  const Dataset copy = ds;  // NOLINT: the copy is the point
  (void)ds.next_epoch();
  EXPECT_EQ(copy.epoch(), 1);
  (void)copy.next_epoch();
  EXPECT_EQ(ds.epoch(), 2);
  const Dataset rows = Dataset::from_columns({"y"}, {Tensor::from_vector({4}, std::vector<int32_t>{0, 1, 2, 3})});
  (void)rows.next_epoch();
  EXPECT_EQ(rows.epoch(), 1);
  EXPECT_EQ(rows.batch(2).epoch(), 0);
  EXPECT_EQ(rows.take(2).epoch(), 0);
  EXPECT_EQ(rows.shuffle(1).epoch(), 0);
}

TEST(EpochCounter, EachReaderCountsItsOwnEpochs) {
  const Dataset ds = shuffled();
  (void)ds.next_epoch(0);
  (void)ds.next_epoch(0);
  EXPECT_EQ(ds.epoch(0), 2);
  EXPECT_EQ(ds.epoch(1), 0) << "rank 1 has walked nothing yet";
  EXPECT_EQ(order(ds.next_epoch(1)), order(ds.iterator(0)));
  ds.set_epoch(4, 1);
  EXPECT_EQ(ds.epoch(1), 4);
  EXPECT_EQ(ds.epoch(0), 2);
  ds.set_epoch(3);  // every reader
  EXPECT_EQ(ds.epoch(0), 3);
  EXPECT_EQ(ds.epoch(1), 3);
  EXPECT_EQ(ds.epoch(), 3);
  EXPECT_EQ(order(ds.next_epoch(0)), order(ds.iterator(3)));
}

TEST(EpochCounter, NegativeEpochIsRefused) {
  const Dataset ds = shuffled();
  EXPECT_THAT([&] { ds.set_epoch(-1); },
              ThrowsMessage<InvalidArgument>(HasSubstr("Dataset::set_epoch: epoch must be >= 0, got -1")));
  EXPECT_THAT([&] { ds.set_epoch(-2, 3); }, ThrowsMessage<InvalidArgument>(HasSubstr("got -2 (reader 3)")));
}

}  // namespace
}  // namespace sf::dataset
