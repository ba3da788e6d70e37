// Tests for the brief renderings of core/brief.h: short values shown whole, long ones as a
// head and a count, user text on one line with its UTF-8 characters whole.
#include <shardflow/core/brief.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <shardflow/core/shape.h>

namespace sf {
namespace {

TEST(Brief, IntsKeepTheirFirstEntriesAndACount) {
  EXPECT_EQ(brief_ints(std::vector<int64_t>{1, 2, 3}), "(1,2,3)");
  EXPECT_EQ(brief_ints(std::vector<int>{}), "()");
  std::vector<int> ranks(100000);
  for (int i = 0; i < 100000; ++i) ranks[i] = i;
  EXPECT_EQ(brief_ints(ranks, 3), "(0,1,2, ... 99997 more)");
}

TEST(Brief, ShapeMatchesShapeStrWhenShort) {
  for (const Shape& s : {Shape{}, Shape{5}, Shape{32, 784}, Shape{1, 2, 3, 4, 5, 6, 7, 8}})
    EXPECT_EQ(brief_shape(s), shape_str(s));
  EXPECT_EQ(brief_shape(Shape(10000, 1)), "(1, 1, 1, 1, 1, 1, 1, 1, ... 9992 more)");
}

TEST(Brief, TextIsOneLineAndBounded) {
  EXPECT_EQ(brief_text("fc1"), "fc1");
  EXPECT_EQ(brief_text("a\nb\r\tc\x1b[0m\x7f"), "a\\nb\\r\\tc\\x1b[0m\\x7f");
  const std::string mb(1 << 20, '\n');
  const std::string b = brief_text(mb, 50);
  EXPECT_EQ(b.find('\n'), std::string::npos);
  EXPECT_LE(b.size(), 80u) << b;
  EXPECT_NE(b.find("more bytes"), std::string::npos) << b;
}

TEST(Brief, TextKeepsUtf8WholeAndEscapesBrokenBytes) {
  EXPECT_EQ(brief_text("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(brief_text("\xff\xc3("), "\\xff\\xc3(");      // not UTF-8
  EXPECT_EQ(brief_text("\xe2\x82\xac\xe2\x82\xac", 4), "\xe2\x82\xac... (3 more bytes)");
}

TEST(Brief, NamesAreEachBriefAndCounted) {
  EXPECT_EQ(brief_names({"x", "y"}), "x, y");
  const std::vector<std::string> many(1000, "col");
  EXPECT_EQ(brief_names(many, 2), "col, col, ... 998 more");
  const std::string line = brief_names({std::string(1 << 20, 'n')}, 8, 10);
  EXPECT_LE(line.size(), 40u) << line;
}

}  // namespace
}  // namespace sf
