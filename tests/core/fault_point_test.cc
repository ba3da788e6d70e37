// Fault points (core/fault_point.h): SF_FAULT_AT=NAME:N:RANK kills the process of that sfrun rank
// the Nth time it passes NAME, no sooner and no other process; a malformed value arms nothing and
// says so. Each case runs in a fresh process (a death test re-runs the binary), since a process
// reads SF_FAULT_AT once.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <shardflow/core/fault_point.h>

namespace sf {
namespace {

// Passes `name` `times` times, saying on stderr how many passes it survived.
void fault_point_passes(const char* name, int times) {
  for (int i = 1; i <= times; ++i) {
    fault_point(name);
    std::fprintf(stderr, "passed %d\n", i);
  }
}

TEST(FaultPointDeathTest, TheArmedRankDiesAtTheNthPassOfItsPoint) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("SF_FAULT_AT", "save:3:2", 1);
        ::setenv("SF_RANK", "2", 1);
        fault_point_passes("step", 5);  // another point counts nothing
        fault_point_passes("save", 5);
        std::exit(0);
      },
      testing::KilledBySignal(SIGKILL), "passed 5\n(.|\n)*passed 2\n$");
}

TEST(FaultPointDeathTest, AnotherRankPassesUnharmed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("SF_FAULT_AT", "save:3:2", 1);
        ::setenv("SF_RANK", "1", 1);
        fault_point_passes("save", 5);
        std::exit(0);
      },
      testing::ExitedWithCode(0), "passed 5");
}

TEST(FaultPointDeathTest, AMalformedValueArmsNothingAndSaysSo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        ::setenv("SF_FAULT_AT", "save:0:2", 1);  // N counts from 1
        ::setenv("SF_RANK", "2", 1);
        fault_point_passes("save", 3);
        std::exit(0);
      },
      testing::ExitedWithCode(0), "SF_FAULT_AT='save:0:2' is not NAME:N:RANK \\(N >= 1\\); no fault point is armed");
}

}  // namespace
}  // namespace sf
