// Golden schedule tests: every generator's action lists for (p, m, v) = (2,4,1), (4,8,1) and
// (4,8,2) match the files in tests/pipeline/golden, which were checked by hand against the
// papers' figures. SF_REGENERATE_GOLDEN=1 rewrites the files instead (then read the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <shardflow/core/error.h>
#include <shardflow/core/text_file.h>
#include <shardflow/pipeline/schedule.h>

namespace sf::pipeline {
namespace {

struct Case {
  ScheduleKind kind;
  int p, m, v;
};

std::string golden_path(const Schedule& s) {
  return std::string(SF_TESTS_SOURCE_DIR) + "/pipeline/golden/" + s.name + "_p" + std::to_string(s.stages) + "_m" +
         std::to_string(s.micro_batches) + "_v" + std::to_string(s.chunks) + ".txt";
}

class GoldenSchedule : public ::testing::TestWithParam<Case> {};

TEST_P(GoldenSchedule, MatchesCheckedInFile) {
  const Case c = GetParam();
  const Schedule schedule = make_schedule(c.kind, c.p, c.m, c.v);
  const std::string path = golden_path(schedule);
  const std::string text = to_text(schedule);
  if (std::getenv("SF_REGENERATE_GOLDEN")) write_text_file(path, text);
  EXPECT_EQ(text, read_text_file(path)) << path;
  // The text form reads back to the same lists.
  EXPECT_EQ(parse_schedule(text, c.m, c.v).actions, schedule.actions);
}

INSTANTIATE_TEST_SUITE_P(
    AllSchedules, GoldenSchedule,
    ::testing::Values(Case{ScheduleKind::kGPipe, 2, 4, 1}, Case{ScheduleKind::kGPipe, 4, 8, 1},
                      Case{ScheduleKind::kOneFOneB, 2, 4, 1}, Case{ScheduleKind::kOneFOneB, 4, 8, 1},
                      Case{ScheduleKind::kInterleaved1F1B, 4, 8, 2}, Case{ScheduleKind::kZeroBubbleH1, 2, 4, 1},
                      Case{ScheduleKind::kZeroBubbleH1, 4, 8, 1}),
    [](const auto& info) {
      const Case& c = info.param;
      std::string name(schedule_name(c.kind));
      return name + "_p" + std::to_string(c.p) + "_m" + std::to_string(c.m) + "_v" + std::to_string(c.v);
    });

TEST(Schedule, RefusesBadSizesWithAClearError) {
  EXPECT_THROW(make_schedule(ScheduleKind::kGPipe, 0, 4), InvalidArgument);
  EXPECT_THROW(make_schedule(ScheduleKind::kOneFOneB, 2, 0), InvalidArgument);
  EXPECT_THROW(make_schedule(ScheduleKind::kOneFOneB, 2, 4, 2), InvalidArgument);
  EXPECT_THROW(make_schedule(ScheduleKind::kInterleaved1F1B, 4, 8, 1), InvalidArgument);
  try {
    make_schedule(ScheduleKind::kInterleaved1F1B, 1, 2, 2);
    FAIL() << "accepted one stage";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "pipeline schedule 'interleaved_1f1b': needs at least 2 stages, got 1 with 2 chunks (use '1f1b' on "
                 "one stage)");
  }
  try {
    make_schedule(ScheduleKind::kInterleaved1F1B, 4, 6, 2);
    FAIL() << "accepted m = 6 with p = 4";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "pipeline schedule 'interleaved_1f1b': micro-batches (6) must be a multiple of the stages (4)");
  }
}

TEST(Schedule, ParseNamesTheStageOfABadAction) {
  try {
    parse_schedule("F0 B0\nF0 X0\n", 1);
    FAIL() << "accepted X0";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("stage 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'X0'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sf::pipeline
