// Errors from comm stay one line of bounded length whatever the input: a group of 100,000
// ranks, a group name of 1 MB with newlines, ranks that disagree over 10,000-dim shapes, and
// SF_COMM_FLIGHT_RECORDS beyond its limit (docs/limits.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <shardflow/comm/detail/signature.h>
#include <shardflow/comm/flight_recorder.h>
#include <shardflow/comm/group.h>
#include <shardflow/comm/inproc/transport.h>
#include <shardflow/core/error.h>

namespace sf::comm {
namespace {

// The message of the InvalidArgument `f` throws, checked to be one line under 400 bytes.
std::string one_line_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_LT(m.size(), 400u) << m;
    return m;
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

TEST(BoundedErrors, AGroupOf100000RanksIsNamedByItsHead) {
  auto world = make_inproc_world(4);
  std::vector<int> ranks;
  for (int i = 0; i < 100000; ++i) ranks.push_back(i % 3);  // 0, 1, 2, 0: listed twice
  const std::string m = one_line_error([&] { create_group(world[0], "g", ranks); });
  EXPECT_NE(m.find("create_group('g'): rank 0 is listed twice in [0, 1, 2, 0, 1, 2, 0, 1, ... 99992 more]"),
            std::string::npos)
      << m;
}

TEST(BoundedErrors, AGroupNameOf1MBWithNewlinesIsShownBriefly) {
  auto world = make_inproc_world(4);
  std::string name;
  while (name.size() < (1u << 20)) name += "grp\n";
  const std::string m = one_line_error([&] { create_group(world[0], name, {1, 2}); });
  EXPECT_EQ(m.rfind("create_group('grp\\ngrp\\n", 0), 0u) << m;
  EXPECT_NE(m.find("more bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("this rank 0 is not a member of [1, 2]"), std::string::npos) << m;
}

TEST(BoundedErrors, ShapesThatDifferOver100000RanksAreSummarised) {
  std::vector<detail::Signature> sigs;
  std::vector<int> world_ranks;
  for (int r = 0; r < 100000; ++r) {
    detail::Signature s = detail::Signature::bare("AllReduce");
    s.has_tensor = true;
    s.shape = r < 99990 ? Shape{4, 8} : r == 99990 ? Shape(10000, 1) : Shape{r};
    sigs.push_back(std::move(s));
    world_ranks.push_back(r);
  }
  const std::string m = detail::describe_mismatch(sigs, world_ranks);
  EXPECT_EQ(m.find('\n'), std::string::npos);
  EXPECT_LT(m.size(), 400u) << m;
  EXPECT_EQ(m.rfind("ranks 0, 1, 2, 3, ... 99986 more called AllReduce f32(4, 8); rank 99990 called AllReduce "
                    "f32(1, 1, 1, 1, ",
                    0),
            0u)
      << m;
  EXPECT_NE(m.find("rank 99991 called AllReduce f32(99991,)"), std::string::npos) << m;
  EXPECT_NE(m.find("7 more kinds"), std::string::npos) << m;
}

class FlightRecordsEnv : public ::testing::Test {
 protected:
  void TearDown() override { ::unsetenv("SF_COMM_FLIGHT_RECORDS"); }
};

TEST_F(FlightRecordsEnv, BeyondTheLimitIsRefusedNamingTheVariable) {
  ::setenv("SF_COMM_FLIGHT_RECORDS", "1000000000", 1);
  EXPECT_EQ(one_line_error([] { FlightRecorder r; }),
            "SF_COMM_FLIGHT_RECORDS='1000000000' is not a whole number in 0 .. 4096");
  ::setenv("SF_COMM_FLIGHT_RECORDS", "99999999999999999999999", 1);  // overflows long long
  EXPECT_NE(one_line_error([] { FlightRecorder r; }).find("is not a whole number in 0 .. 4096"), std::string::npos);
  ::setenv("SF_COMM_FLIGHT_RECORDS", "-1", 1);
  EXPECT_NE(one_line_error([] { FlightRecorder r; }).find("'-1'"), std::string::npos);
  ::setenv("SF_COMM_FLIGHT_RECORDS", "12\nx", 1);
  EXPECT_NE(one_line_error([] { FlightRecorder r; }).find("'12\\nx'"), std::string::npos);
}

TEST_F(FlightRecordsEnv, TheLimitItselfAndZeroAreAccepted) {
  ::setenv("SF_COMM_FLIGHT_RECORDS", "4096", 1);
  EXPECT_NO_THROW(FlightRecorder());
  ::setenv("SF_COMM_FLIGHT_RECORDS", "0", 1);
  FlightRecorder off;
  off.begin(1, "AllReduce");
  EXPECT_TRUE(off.records().empty());
}

TEST(BoundedErrors, AFlightRecordKeepsAHugeCallBriefly) {
  FlightRecorder rec(2);
  rec.begin(1, "AllReduce f32" + std::string(1 << 20, '1'));
  ASSERT_EQ(rec.records().size(), 1u);
  EXPECT_LT(rec.records()[0].call.size(), 300u);
}

}  // namespace
}  // namespace sf::comm
