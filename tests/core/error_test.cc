// Tests for the typed errors and the SF_ENFORCE / SF_THROW macros (core/error.h): the thrown
// type, the fmt-formatted message, where() naming this file and line, and that the message
// arguments cost nothing when the condition holds.
#include "core/error.h"

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

}  // namespace
}  // namespace sf
