#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <shardflow/data/dataset.h>
#include <shardflow/data/idx_file.h>
#include "tests/data/idx_fixture.h"

namespace sf::dataset {
namespace {

using fixture::TempDir;
using fixture::write_mnist;
using ::testing::HasSubstr;

std::string mnist_error(const std::string& dir, const std::string& usage = "train") {
  try {
    Dataset::mnist(dir, usage);
  } catch (const IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected IoError for " << dir;
  return {};
}

TEST(Mnist, ReadsImagesAsHwcFloatsAndLabelsAsInts) {
  TempDir dir;
  write_mnist(dir.path(), "train", 5, 3, 4, false);
  Dataset ds = Dataset::mnist(dir.path());
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"image", "label"}));
  EXPECT_EQ(ds.num_rows(), 5);
  const Tensor& image = ds.column("image");
  EXPECT_EQ(image.shape(), (Shape{5, 3, 4, 1}));
  EXPECT_EQ(image.dtype(), DType::kF32);
  EXPECT_EQ(image.f32()[2 * 12 + 7], 32.0f + 7);  // image 2, pixel 7: (2 * 16 + 7) % 256
  EXPECT_EQ(ds.column("label").dtype(), DType::kI32);
  EXPECT_EQ(ds.column("label").i32()[4], 4);
}

TEST(Mnist, GzipAndRawDirectoriesGiveIdenticalColumns) {
  TempDir raw, gz;
  write_mnist(raw.path(), "t10k", 6, 2, 2, false);
  write_mnist(gz.path(), "t10k", 6, 2, 2, true);
  Dataset a = Dataset::mnist(raw.path(), "test"), b = Dataset::mnist(gz.path(), "test");
  EXPECT_TRUE(bitwise_equal(a.column("image"), b.column("image")));
  EXPECT_TRUE(bitwise_equal(a.column("label"), b.column("label")));
}

TEST(Mnist, ShardsOfTenRowsFollowTheDocumentedOrder) {
  TempDir dir;
  write_mnist(dir.path(), "train", 10, 2, 2, true);
  const std::vector<std::vector<int32_t>> expect = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  for (int k = 0; k < 3; ++k) {
    Dataset ds = Dataset::mnist(dir.path(), "train", 3, k);
    ASSERT_EQ(ds.num_rows(), 4);
    const Tensor& label = ds.column("label");
    EXPECT_EQ(std::vector<int32_t>(label.i32(), label.i32() + 4), expect[k]) << "shard " << k;
    EXPECT_EQ(ds.column("image").f32()[4 * 3], 16.0f * expect[k][3]);  // row 3, pixel 0
  }
}

TEST(Mnist, MissingDirectoryNamesItAndTheFilesItWanted) {
  TempDir dir;
  const std::string missing = dir.file("no-such-dir");
  std::string msg = mnist_error(missing);
  EXPECT_THAT(msg, HasSubstr("'" + missing + "'"));
  EXPECT_THAT(msg, HasSubstr("train-images-idx3-ubyte"));
  EXPECT_THAT(msg, HasSubstr("train-labels-idx1-ubyte"));
}

TEST(Mnist, MissingFileNamesThePath) {
  TempDir dir;
  write_mnist(dir.path(), "train", 3, 2, 2, false);
  std::filesystem::remove(dir.file("train-labels-idx1-ubyte"));
  EXPECT_THAT(mnist_error(dir.path()), HasSubstr(fmt::format("cannot open '{}'", dir.file("train-labels-idx1-ubyte"))));
  EXPECT_THAT(mnist_error(dir.path(), "test"), HasSubstr("t10k-images-idx3-ubyte"));
}

TEST(Mnist, CountMismatchNamesBothFiles) {
  TempDir dir, other;
  write_mnist(dir.path(), "train", 5, 2, 2, false);
  write_mnist(other.path(), "train", 4, 2, 2, false);
  std::filesystem::copy_file(other.file("train-labels-idx1-ubyte"), dir.file("train-labels-idx1-ubyte"),
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(mnist_error(dir.path()),
            fmt::format("'{}' holds 5 images but '{}' holds 4 labels", dir.file("train-images-idx3-ubyte"),
                        dir.file("train-labels-idx1-ubyte")));
}

// A label >= the class count names the labels file and the sample, in one line.
TEST(Mnist, LabelOutOfRangeNamesFileAndSample) {
  TempDir dir;
  write_mnist(dir.path(), "train", 5, 2, 2, false);
  fixture::write_file(dir.file("train-labels-idx1-ubyte"), fixture::idx_bytes(0x801, {5}, {0, 1, 9, 10, 3}), false);
  EXPECT_EQ(mnist_error(dir.path()), fmt::format("'{}': label 10 of sample 3 is not below the class count 10",
                                                 dir.file("train-labels-idx1-ubyte")));
  EXPECT_NO_THROW(Dataset::mnist(dir.path(), "train", 1, 0, 11));
}

// A set of 0 images is refused (it used to train 0 steps and exit 0).
TEST(Mnist, ZeroSamplesAreRefused) {
  TempDir dir;
  write_mnist(dir.path(), "train", 0, 28, 28, false);
  EXPECT_THAT(mnist_error(dir.path()), HasSubstr("IDX dim 0 of images is 0"));
}

TEST(Mnist, BadArgumentsAreInvalid) {
  TempDir dir;
  write_mnist(dir.path(), "train", 3, 2, 2, false);
  EXPECT_THROW(Dataset::mnist(dir.path(), "all"), InvalidArgument);
  EXPECT_THROW(Dataset::mnist(dir.path(), "train", 0, 0), InvalidArgument);
  try {
    Dataset::mnist(dir.path(), "train", 2, 5);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("shard_id must be in [0, 2) for num_shards = 2, got 5"));
  }
}

// The seed's create_dataset on the real Debian files.
TEST(Mnist, RealFashionMnist) {
  const std::string dir = SF_FASHION_MNIST_DIR;
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << dir << " is absent (install dataset-fashion-mnist)";
  Dataset train = Dataset::mnist(dir, "train");
  Dataset test = Dataset::mnist(dir, "test");
  EXPECT_EQ(train.num_rows(), 60000);
  EXPECT_EQ(test.num_rows(), 10000);
  EXPECT_EQ(train.column("image").shape(), (Shape{60000, 28, 28, 1}));
  for (const Dataset* ds : {&train, &test}) {
    const Tensor& label = ds->column("label");
    auto [lo, hi] = std::minmax_element(label.i32(), label.i32() + label.numel());
    EXPECT_EQ(*lo, 0);
    EXPECT_EQ(*hi, 9);
  }
  EXPECT_EQ(train.column("label").i32()[0], 9);  // Fashion-MNIST's first train label (ankle boot)
  const Tensor& image = test.column("image");
  EXPECT_EQ(*std::max_element(image.f32(), image.f32() + image.numel()), 255.0f);

  Dataset ds = Dataset::mnist(dir, "train", 8, 3)
                   .map({Rescale(1.0f / 255, 0), Normalize({0.1307f}, {0.3081f}), HWC2CHW()}, "image")
                   .map({TypeCast(DType::kI32)}, "label")
                   .batch(32);
  EXPECT_EQ(ds.num_rows(), 7500);
  EXPECT_EQ(ds.get_dataset_size(), 234);
  BatchIterator it = ds.iterator();
  const std::vector<Tensor>* b = it.next();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ((*b)[0].shape(), (Shape{32, 1, 28, 28}));
  EXPECT_EQ((*b)[1].shape(), (Shape{32}));
  EXPECT_EQ((*b)[1].i32()[0], train.column("label").i32()[3]);  // shard 3 starts at row 3
}

}  // namespace
}  // namespace sf::dataset
