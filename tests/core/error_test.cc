// Tests for the typed errors and the SF_ENFORCE / SF_THROW macros (core/error.h): the thrown
// type, the fmt-formatted message, where() naming this file and line, and that the message
// arguments cost nothing when the condition holds; the last guard that keeps every message one
// line of at most kMaxErrorChars bytes, UTF-8 intact.
#include <shardflow/core/error.h>

#include <gtest/gtest.h>

#include <string>

namespace sf {
namespace {

TEST(Error, EnforceThrowsTheGivenTypeWithFormattedMessageAndWhere) {
  int line = 0;
  try {
    line = __LINE__ + 1;
    SF_ENFORCE(1 + 1 == 3, InvalidArgument, "MatMul '{}': inner dims {} and {} differ", "fc1/MatMul", 784, 512);
    FAIL() << "SF_ENFORCE did not throw";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "MatMul 'fc1/MatMul': inner dims 784 and 512 differ");
    EXPECT_NE(e.where().find("error_test.cc"), std::string::npos) << e.where();
    const std::string suffix = "error_test.cc:" + std::to_string(line);
    ASSERT_GE(e.where().size(), suffix.size());
    EXPECT_EQ(e.where().substr(e.where().size() - suffix.size()), suffix);
    // The location is kept out of the message.
    EXPECT_EQ(std::string(e.what()).find("error_test.cc"), std::string::npos);
  }
}

TEST(Error, EnforceThrowsEachDeclaredType) {
  EXPECT_THROW(SF_ENFORCE(false, ShapeError, "s"), ShapeError);
  EXPECT_THROW(SF_ENFORCE(false, IoError, "io"), IoError);
  EXPECT_THROW(SF_ENFORCE(false, NotFound, "nf"), NotFound);
  EXPECT_THROW(SF_THROW(Error, "plain {}", 1), Error);
}

TEST(Error, EnforceDoesNothingWhenTheConditionHolds) {
  int evaluated = 0;
  auto expensive = [&] {
    ++evaluated;
    return std::string("never formatted");
  };
  EXPECT_NO_THROW(SF_ENFORCE(2 > 1, InvalidArgument, "{}", expensive()));
  EXPECT_EQ(evaluated, 0) << "message arguments were evaluated although the check passed";
}

TEST(Error, EnforceEvaluatesItsConditionOnce) {
  int calls = 0;
  auto check = [&] { return ++calls > 5; };
  EXPECT_THROW(SF_ENFORCE(check(), InvalidArgument, "calls={}", calls), InvalidArgument);
  EXPECT_EQ(calls, 1);
}

TEST(Error, EnforceIsOneStatementInsideIfElse) {
  bool reached_else = false;
  if (false)
    SF_ENFORCE(false, InvalidArgument, "unreachable");
  else
    reached_else = true;
  EXPECT_TRUE(reached_else);
}

TEST(Error, HierarchyLetsCallersCatchByCategory) {
  EXPECT_THROW(SF_THROW(NotFound, "unknown op '{}'", "Foo"), InvalidArgument);
  EXPECT_THROW(SF_THROW(ShapeError, "bad"), InvalidArgument);
  EXPECT_THROW(SF_THROW(IoError, "bad"), Error);
  EXPECT_THROW(SF_THROW(InvalidArgument, "bad"), std::runtime_error);
  try {
    SF_THROW(IoError, "cannot open '{}'", "/nonexistent");
  } catch (const InvalidArgument&) {
    FAIL() << "IoError must not be an InvalidArgument";
  } catch (const IoError& e) {
    EXPECT_STREQ(e.what(), "cannot open '/nonexistent'");
  }
}

TEST(Error, PeerLostCarriesTheRank) {
  try {
    throw PeerLost(3, "rank 3 went silent", SF_WHERE);
  } catch (const Error& e) {
    const auto* lost = dynamic_cast<const PeerLost*>(&e);
    ASSERT_NE(lost, nullptr);
    EXPECT_EQ(lost->rank(), 3);
    EXPECT_STREQ(e.what(), "rank 3 went silent");
    EXPECT_NE(e.where().find("error_test.cc:"), std::string::npos);
  }
}

TEST(Error, WhereIsEmptyWhenNotGiven) {
  const Error e("message only");
  EXPECT_TRUE(e.where().empty());
  EXPECT_STREQ(e.what(), "message only");
}

// True if `s` is well-formed UTF-8 (no cut sequence).
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

TEST(Error, GuardKeepsAHugeMessageShortWithItsHeadAndTail) {
  const std::string huge = "strategy file 'x.json': " + std::string(1 << 20, 'v') + " is not a whole number";
  const Error e(huge);
  const std::string m = e.what();
  EXPECT_LE(m.size(), kMaxErrorChars);
  EXPECT_EQ(m.rfind("strategy file 'x.json': ", 0), 0u) << m;
  EXPECT_NE(m.find("bytes cut"), std::string::npos) << m;
  EXPECT_EQ(m.substr(m.size() - 21), "is not a whole number") << m;
}

TEST(Error, GuardMakesEveryMessageOneLine) {
  const Error e("name 'a\nb\r\x1b[31m' is\tbad");
  EXPECT_STREQ(e.what(), "name 'a\\nb\\r\\x1b[31m' is\tbad");
  // A huge name made of newlines stays one bounded line, also through derived types.
  const ShapeError s(std::string(1 << 20, '\n'));
  const std::string m = s.what();
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_LE(m.size(), kMaxErrorChars);
}

TEST(Error, GuardNeverSplitsAUtf8Character) {
  // Every offset of the cut lands on some byte of a multi-byte character at least once.
  for (size_t pad = 0; pad < 4; ++pad) {
    std::string text(pad, 'a');
    for (int i = 0; i < 5000; ++i) text += "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";  // e-acute, euro, emoji
    const Error e(text);
    const std::string m = e.what();
    EXPECT_LE(m.size(), kMaxErrorChars);
    EXPECT_TRUE(valid_utf8(m)) << "pad " << pad;
  }
}

TEST(Error, GuardLeavesAShortMessageAlone) {
  const std::string exact(kMaxErrorChars, 'x');
  EXPECT_EQ(std::string(Error(exact).what()), exact);
  EXPECT_NE(std::string(Error(exact + "y").what()), exact + "y");
}

}  // namespace
}  // namespace sf
