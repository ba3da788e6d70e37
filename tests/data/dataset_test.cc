#include <shardflow/data/dataset.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

namespace sf::dataset {
namespace {

using ::testing::HasSubstr;

// N rows: "x" (2, 3) f32 with x[i] = i * 6 + 0..5, and "y" i32 = i.
Dataset numbered(int64_t n) {
  std::vector<float> x(n * 6);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<int32_t> y(n);
  std::iota(y.begin(), y.end(), 0);
  return Dataset::from_columns({"x", "y"}, {Tensor::from_vector({n, 2, 3}, x), Tensor::from_vector({n}, y)});
}

std::vector<int32_t> labels_of(const Tensor& t) { return std::vector<int32_t>(t.i32(), t.i32() + t.numel()); }

TEST(Dataset, BatchShapesAndDropRemainder) {
  Dataset ds = numbered(10);
  EXPECT_EQ(ds.num_rows(), 10);
  Dataset dropped = ds.batch(4);
  EXPECT_EQ(dropped.get_dataset_size(), 2);
  BatchIterator it = dropped.iterator();
  const std::vector<Tensor>* b = it.next();
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->size(), 2u);
  EXPECT_EQ((*b)[0].shape(), (Shape{4, 2, 3}));
  EXPECT_EQ((*b)[1].shape(), (Shape{4}));
  EXPECT_EQ((*b)[1].dtype(), DType::kI32);
  ASSERT_NE(it.next(), nullptr);
  EXPECT_EQ(labels_of((*b)[1]), (std::vector<int32_t>{4, 5, 6, 7}));
  EXPECT_EQ(it.next(), nullptr);
  EXPECT_EQ(it.next(), nullptr);

  Dataset kept = ds.batch(4, false);
  EXPECT_EQ(kept.get_dataset_size(), 3);
  BatchIterator all = kept.iterator();
  all.next();
  all.next();
  const std::vector<Tensor>* last = all.next();
  ASSERT_NE(last, nullptr);
  EXPECT_EQ((*last)[0].shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(labels_of((*last)[1]), (std::vector<int32_t>{8, 9}));
  EXPECT_EQ((*last)[0].f32()[6], 54.0f);  // row 9, element 0
  EXPECT_EQ(all.next(), nullptr);
  EXPECT_EQ(all.batches_done(), 3);
}

TEST(Dataset, UnbatchedIterationYieldsRowsWithoutBatchDim) {
  Dataset ds = numbered(3);
  EXPECT_EQ(ds.get_dataset_size(), 3);
  for (Dataset d : {ds, ds.shuffle(1)}) {
    BatchIterator it = d.iterator();
    int64_t rows = 0;
    while (const std::vector<Tensor>* r = it.next()) {
      EXPECT_EQ((*r)[0].shape(), (Shape{2, 3}));
      EXPECT_EQ((*r)[1].shape(), Shape{});
      EXPECT_EQ((*r)[0].f32()[0], 6.0f * (*r)[1].i32()[0]);
      ++rows;
    }
    EXPECT_EQ(rows, 3);
  }
}

TEST(Dataset, SequentialBatchesAreViewsAndShuffledBatchesReuseOneBuffer) {
  Dataset ds = numbered(12);
  BatchIterator seq = ds.batch(4).iterator();
  EXPECT_TRUE((*seq.next())[0].shares_storage(ds.column("x")));

  BatchIterator shuf = ds.shuffle(3).batch(4).iterator(0);
  const void* first = (*shuf.next())[0].raw();
  const std::vector<Tensor>* b = shuf.next();
  EXPECT_EQ((*b)[0].raw(), first);
  EXPECT_FALSE((*b)[0].shares_storage(ds.column("x")));
  // Rows stay whole: x of a row still matches its label.
  for (int r = 0; r < 4; ++r) EXPECT_EQ((*b)[0].f32()[r * 6 + 5], 6.0f * (*b)[1].i32()[r] + 5) << r;
}

TEST(Dataset, ColumnsByName) {
  Dataset ds = numbered(2);
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(ds.column_index("y"), 1);
  try {
    ds.column_index("image");
    FAIL();
  } catch (const NotFound& e) {
    EXPECT_THAT(e.what(), HasSubstr("no column 'image' (columns: x, y)"));
  }
  EXPECT_THROW(ds.map({HWC2CHW()}, "label"), NotFound);
}

TEST(Dataset, PipelineOrderIsChecked) {
  Dataset ds = numbered(4);
  EXPECT_THROW(ds.batch(0), InvalidArgument);
  EXPECT_THROW(ds.batch(2).batch(2), InvalidArgument);
  EXPECT_THROW(ds.batch(2).shuffle(1), InvalidArgument);
  EXPECT_THROW(Dataset::from_columns({"a", "b"}, {Tensor({3}), Tensor({4})}), ShapeError);
  EXPECT_THROW(Dataset::from_columns({"a", "a"}, {Tensor({3}), Tensor({3})}), InvalidArgument);
}

TEST(Dataset, GeneratorMaterialisesRowsOfItsShard) {
  auto fn = [](int64_t i) {
    return std::vector<Tensor>{Tensor::full({2}, static_cast<float>(i)),
                               Tensor::from_vector({}, std::vector<int32_t>{static_cast<int32_t>(i % 2)})};
  };
  Dataset whole = Dataset::generator(fn, 5, {"data", "parity"});
  EXPECT_EQ(whole.column("data").shape(), (Shape{5, 2}));
  EXPECT_EQ(whole.column("data").f32()[9], 4.0f);
  EXPECT_EQ(labels_of(whole.column("parity")), (std::vector<int32_t>{0, 1, 0, 1, 0}));

  Dataset shard = Dataset::generator(fn, 5, {"data", "parity"}, 2, 1);
  EXPECT_EQ(shard.num_rows(), 3);  // rows 1, 3, then 0 (wrapped)
  EXPECT_EQ(shard.column("data").to_vector(), (std::vector<float>{1, 1, 3, 3, 0, 0}));
}

TEST(Dataset, GeneratorRowWithBadShapeNamesTheColumn) {
  auto fn = [](int64_t i) { return std::vector<Tensor>{Tensor({3}), Tensor(i == 2 ? Shape{4} : Shape{2})}; };
  try {
    Dataset::generator(fn, 4, {"a", "b"});
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("column 'b' row 2 is f32 (4,) but row 0 was f32 (2,)"));
  }
  auto wrong_count = [](int64_t) { return std::vector<Tensor>{Tensor({1})}; };
  EXPECT_THROW(Dataset::generator(wrong_count, 2, {"a", "b"}), InvalidArgument);
  EXPECT_THROW(Dataset::generator(wrong_count, 2, {"a"}, 2, 2), InvalidArgument);
}

TEST(Dataset, EmptyDatasetIteratesNothing) {
  Dataset ds = Dataset::generator([](int64_t) { return std::vector<Tensor>{}; }, 0, {"a"}).shuffle(1).batch(2);
  EXPECT_EQ(ds.num_rows(), 0);
  EXPECT_EQ(ds.get_dataset_size(), 0);
  EXPECT_EQ(ds.iterator().next(), nullptr);
}

}  // namespace
}  // namespace sf::dataset
