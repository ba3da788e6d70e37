// The membership lines of an elastic job as sfrun reads them: the generation and the members of a line (the
// reason of a loss is free text), and the membership sfrun follows from them, each generation shown once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tools/sfrun/elastic_lines.h"
#include "tools/sfrun/elastic_membership.h"

namespace sf::sfrun {
namespace {
// Its own namespace, as every test file of tests/tools: they may be compiled several to a unit.
namespace sfrun_elastic_lines_test {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr const char* kLine =
    "shardflow elastic: generation 1: lost rank 2 (no heartbeat for 3.0 s); detected at 17:20:01.123; members 0,1,3 "
    "(4 -> 3 ranks; this rank 3 -> 2); rolled back to step 17; recovered in 0.412 s";

TEST(SfrunElasticLines, ReadsGenerationAndMembers) {
  const auto l = parse_elastic_line(kLine);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->generation, 1);
  EXPECT_THAT(l->members, ElementsAre(0, 1, 3));
  EXPECT_EQ(l->text, kLine);
}

TEST(SfrunElasticLines, SeveralLostRanksAndAPrefixBeforeTheLine) {
  const auto l = parse_elastic_line(
      "[12:00:00] I shardflow elastic: generation 12: lost ranks 1, 2 (a; members 9,9 in the reason); detected at "
      "00:00:00.000; members 0, 3, 4 (5 -> 3 ranks; this rank 4 -> 2); rolled back to step 0; recovered in 1.000 s");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->generation, 12);
  EXPECT_THAT(l->members, ElementsAre(0, 3, 4));
  EXPECT_EQ(l->text.rfind("shardflow elastic: generation 12: lost ranks 1, 2", 0), 0u);
}

TEST(SfrunElasticLines, ALineWithoutMembersIsStillALine) {
  const auto l = parse_elastic_line("shardflow elastic: generation 3: 1 rank left, below the minimum 2 of --elastic");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->generation, 3);
  EXPECT_THAT(l->members, IsEmpty());
  for (const char* s : {"shardflow elastic: generation 2: lost rank 1 (x); members 0,x (3 -> 2 ranks)",
                        "shardflow elastic: generation 2: lost rank 1 (x); members 0, (3 -> 2 ranks)",
                        "shardflow elastic: generation 2: lost rank 1 (x); members (3 -> 2 ranks)"}) {
    const auto bad = parse_elastic_line(s);
    ASSERT_TRUE(bad) << s;
    EXPECT_THAT(bad->members, IsEmpty()) << s;
  }
}

TEST(SfrunElasticLines, BelowTheMinimumNamesTheMembersThatStop) {
  // train_elastic's line when too few are left: its members save a checkpoint and exit with an error.
  const auto l = parse_elastic_line(
      "shardflow elastic: generation 2: lost rank 1; detected at 17:20:01.123; members 3 (2 -> 1 ranks, below the "
      "minimum of 2): saving step 5 to ckpt and stopping");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->generation, 2);
  EXPECT_THAT(l->members, ElementsAre(3));
}

TEST(SfrunElasticLines, OtherLinesAreNot) {
  for (const char* s : {"", "rank 0 step 3", "shardflow elastic: generation", "shardflow elastic: generation x: a",
                        "shardflow elastic: generation 1 members 0", "shardflow elastic: generation -1: members 0",
                        "shardflow elastic: generation 99999999999: members 0", "shardflow comm: rank 0: timed out"})
    EXPECT_FALSE(parse_elastic_line(s)) << s;
}

TEST(SfrunElasticMembership, FollowsTheNewestGenerationAndShowsEachOnce) {
  ElasticMembership m(4);
  EXPECT_EQ(m.generation(), 0);
  EXPECT_THAT(m.members(), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(m.on_line("rank 0 step 3"), "");
  EXPECT_EQ(m.on_line(kLine), std::string("sfrun: ") + kLine + "\n");
  EXPECT_EQ(m.on_line(kLine), "");  // the same change, printed by the next rank
  EXPECT_EQ(m.generation(), 1);
  EXPECT_THAT(m.members(), ElementsAre(0, 1, 3));
  EXPECT_FALSE(m.is_member(2));
  EXPECT_TRUE(m.is_member(3));
  EXPECT_NE(m.on_line("shardflow elastic: generation 2: lost rank 1 (x); members 0,3 (3 -> 2 ranks)"), "");
  EXPECT_THAT(m.members(), ElementsAre(0, 3));
  // A slow rank's line of an older generation changes nothing.
  EXPECT_EQ(m.on_line("shardflow elastic: generation 1: lost rank 2 (x); members 0,1,3 (4 -> 3 ranks)"), "");
  EXPECT_THAT(m.members(), ElementsAre(0, 3));
  // Below the minimum: shown, the members stay.
  EXPECT_NE(m.on_line("shardflow elastic: generation 3: 1 rank left, below the minimum 2"), "");
  EXPECT_THAT(m.members(), ElementsAre(0, 3));
  EXPECT_EQ(m.generation(), 2);
}

TEST(SfrunElasticMembership, AListNamingUnknownRanksChangesNothing) {
  ElasticMembership m(3);
  EXPECT_NE(m.on_line("shardflow elastic: generation 1: lost rank 1 (x); members 0,7 (3 -> 2 ranks)"), "");
  EXPECT_THAT(m.members(), ElementsAre(0, 1, 2));
  EXPECT_FALSE(m.is_member(7));
  EXPECT_FALSE(m.is_member(-1));
}

}  // namespace sfrun_elastic_lines_test
}  // namespace
}  // namespace sf::sfrun
