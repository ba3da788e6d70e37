#include <shardflow/data/idx_file.h>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/core/error.h>
#include "tests/data/idx_fixture.h"

namespace sf::dataset {
namespace {

using fixture::idx_bytes;
using fixture::image_data;
using fixture::TempDir;
using fixture::write_file;
using ::testing::HasSubstr;

// The IoError message of read_idx(path, magic, what); fails the test if nothing is thrown.
std::string read_error(const std::string& path, uint32_t magic, const std::string& what) {
  try {
    read_idx(path, magic, what);
  } catch (const IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected IoError reading " << path;
  return {};
}

TEST(IdxFile, ReadsHeaderAndValues) {
  TempDir dir;
  const std::string path = dir.file("img");
  write_file(path, idx_bytes(kIdxImagesMagic, {3, 2, 4}, image_data(3, 2, 4)), false);
  IdxArray a = read_idx(path, kIdxImagesMagic, "images");
  EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(a.count(), 3);
  EXPECT_EQ(a.bytes, image_data(3, 2, 4));
  EXPECT_EQ(a.bytes[8 + 5], 16 + 5);  // image 1, pixel 5
}

TEST(IdxFile, GzipAndRawGiveIdenticalData) {
  TempDir dir;
  const auto bytes = idx_bytes(kIdxLabelsMagic, {7}, {9, 0, 0, 3, 0, 2, 7});
  write_file(dir.file("raw"), bytes, false);
  write_file(dir.file("zip.gz"), bytes, true);
  IdxArray raw = read_idx(dir.file("raw"), kIdxLabelsMagic, "labels");
  IdxArray zip = read_idx(dir.file("zip.gz"), kIdxLabelsMagic, "labels");
  EXPECT_EQ(raw.dims, zip.dims);
  EXPECT_EQ(raw.bytes, zip.bytes);
  EXPECT_EQ(raw.bytes, (std::vector<uint8_t>{9, 0, 0, 3, 0, 2, 7}));
}

TEST(IdxFile, MissingFileNamesThePath) {
  TempDir dir;
  const std::string path = dir.file("nope-idx1-ubyte");
  EXPECT_EQ(read_error(path, kIdxLabelsMagic, "labels"), "cannot open '" + path + "': No such file or directory");
}

TEST(IdxFile, TruncatedDataSaysHowMuchIsMissing) {
  TempDir dir;
  for (bool gz : {false, true}) {
    const std::string path = dir.file(gz ? "short.gz" : "short");
    const auto full = idx_bytes(kIdxImagesMagic, {3, 2, 2}, image_data(3, 2, 2));
    write_file(path, {full.begin(), full.end() - 7}, gz);  // 12 data bytes declared, 5 present
    EXPECT_EQ(read_error(path, kIdxImagesMagic, "images"),
              "'" + path + "' is truncated: expected 12 bytes of data, got 5");
  }
}

TEST(IdxFile, TruncatedHeaderAndEmptyFile) {
  TempDir dir;
  const auto header = idx_bytes(kIdxImagesMagic, {3, 2, 2}, {});
  write_file(dir.file("hdr"), {header.begin(), header.begin() + 9}, false);  // ends inside the second dim
  EXPECT_THAT(read_error(dir.file("hdr"), kIdxImagesMagic, "images"), HasSubstr("is truncated"));
  write_file(dir.file("empty"), {}, false);
  EXPECT_THAT(read_error(dir.file("empty"), kIdxImagesMagic, "images"),
              HasSubstr(fmt::format("'{}' is truncated", dir.file("empty"))));
}

TEST(IdxFile, WrongMagicNamesBothMagics) {
  TempDir dir;
  const std::string path = dir.file("labels-as-images");
  write_file(path, idx_bytes(kIdxLabelsMagic, {2}, {1, 2}), true);
  EXPECT_EQ(read_error(path, kIdxImagesMagic, "images"),
            "'" + path + "': bad IDX magic 0x00000801 (expected 0x00000803 for images)");
}

TEST(IdxFile, TrailingBytesAreRefused) {
  TempDir dir;
  auto bytes = idx_bytes(kIdxLabelsMagic, {2}, {1, 2, 3});
  write_file(dir.file("long"), bytes, false);
  EXPECT_THAT(read_error(dir.file("long"), kIdxLabelsMagic, "labels"), HasSubstr("has bytes past the 2 bytes"));
}

// A zero dim (0 images, or 0-pixel images) is refused naming the file and the dim, raw or gzip.
TEST(IdxFile, ZeroDimsAreRefused) {
  TempDir dir;
  for (bool gz : {false, true}) {
    const std::string none = dir.file(gz ? "none.gz" : "none"), flat = dir.file(gz ? "flat.gz" : "flat");
    write_file(none, idx_bytes(kIdxImagesMagic, {0, 28, 28}, {}), gz);
    EXPECT_EQ(read_error(none, kIdxImagesMagic, "images"),
              "'" + none + "': IDX dim 0 of images is 0 (dims (0)); every dim must be at least 1");
    write_file(flat, idx_bytes(kIdxImagesMagic, {4, 0, 28}, {}), gz);
    EXPECT_EQ(read_error(flat, kIdxImagesMagic, "images"),
              "'" + flat + "': IDX dim 1 of images is 0 (dims (4,0)); every dim must be at least 1");
  }
}

// A header claiming more than the limit, or more than the file can hold, is refused before the
// data is allocated (no 4 GiB vector for a 16-byte file).
TEST(IdxFile, ImplausibleSizesAreRefusedBeforeAllocating) {
  TempDir dir;
  write_file(dir.file("big"), idx_bytes(kIdxImagesMagic, {65536, 65536, 2}, {}), false);
  EXPECT_THAT(read_error(dir.file("big"), kIdxImagesMagic, "images"),
              HasSubstr("IDX header declares more than 4294967296 elements (dims so far (65536,65536,2))"));
  for (bool gz : {false, true}) {
    const std::string path = dir.file(gz ? "liar.gz" : "liar");
    write_file(path, idx_bytes(kIdxImagesMagic, {60000, 28, 28}, {1, 2, 3}), gz);
    EXPECT_THAT(read_error(path, kIdxImagesMagic, "images"),
                HasSubstr("'" + path + "' is truncated: expected 47040000 bytes of data"));
  }
}

TEST(IdxFile, FindPrefersRawThenGz) {
  TempDir dir;
  EXPECT_EQ(find_idx_file(dir.path(), "x"), "");
  write_file(dir.file("x.gz"), {1}, true);
  EXPECT_EQ(find_idx_file(dir.path(), "x"), dir.file("x.gz"));
  write_file(dir.file("x"), {1}, false);
  EXPECT_EQ(find_idx_file(dir.path(), "x"), dir.file("x"));
}

}  // namespace
}  // namespace sf::dataset
