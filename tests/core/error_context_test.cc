// Tests for with_context (core/error_context.h): the error keeps its type (PeerLost its rank),
// its where() and gains the context once; a message that already names the context is passed
// on untouched; an exception that is not an sf::Error becomes one.
#include <shardflow/core/error_context.h>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <shardflow/core/error.h>

namespace sf {
namespace {

template <class E>
E rethrown_as(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not the expected type: " << e.what();
  }
  throw std::logic_error("unreachable");
}

TEST(ErrorContext, PeerLostKeepsItsRankWhereAndGainsTheContext) {
  const auto p = with_context(std::make_exception_ptr(PeerLost(3, "AllReduce: rank 3 did not take part", "x.cc:1")),
                              "AllReduce 'grads/AllReduce'");
  const PeerLost e = rethrown_as<PeerLost>(p);
  EXPECT_EQ(e.rank(), 3);
  EXPECT_EQ(e.where(), "x.cc:1");
  EXPECT_STREQ(e.what(), "AllReduce 'grads/AllReduce': AllReduce: rank 3 did not take part");
}

TEST(ErrorContext, EachCoreTypeStaysItself) {
  auto check = [](auto error, auto probe) {
    using E = decltype(probe);
    const auto p = with_context(std::make_exception_ptr(error), "op 'a'");
    try {
      std::rethrow_exception(p);
    } catch (const E& e) {
      EXPECT_EQ(typeid(e), typeid(error)) << e.what();
      EXPECT_STREQ(e.what(), "op 'a': bad");
    }
  };
  check(ShapeError("bad"), ShapeError(""));
  check(NotFound("bad"), NotFound(""));
  check(InvalidArgument("bad"), InvalidArgument(""));
  check(IoError("bad"), IoError(""));
  check(Error("bad"), Error(""));
}

TEST(ErrorContext, AMessageNamingTheContextIsPassedOnUnchanged) {
  const auto original = std::make_exception_ptr(InvalidArgument("Loss 'ce': label 12 of row 0 is out of range"));
  const auto p = with_context(original, "Loss 'ce'");
  EXPECT_EQ(p, original);
}

TEST(ErrorContext, AStdExceptionBecomesAnError) {
  const Error e = rethrown_as<Error>(with_context(std::make_exception_ptr(std::runtime_error("boom")), "op 'a'"));
  EXPECT_STREQ(e.what(), "op 'a': boom");
}

TEST(ErrorContext, NullStaysNull) { EXPECT_FALSE(with_context(nullptr, "op 'a'")); }

}  // namespace
}  // namespace sf
