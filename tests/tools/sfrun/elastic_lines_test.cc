// The membership lines of an elastic job as sfrun reads them: the generation and the members of a line (the
// reason of a loss is free text), and the membership sfrun follows from them, each generation shown once; the join
// lines (where a replacement rank joins) and the newest of them, which sfrun keeps; when a replacement's door is
// gone (a newer world's door elsewhere); the line by which a rank says it trains elastic.
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

TEST(SfrunElasticLines, AJoinedRanksLineListsItAgain) {
  // train_elastic's line when a replacement joined: the members in the new world's order.
  const auto l = parse_elastic_line(
      "shardflow elastic: generation 2: rank 2 joined; detected at 17:20:05.000; members 0,1,3,2 (3 -> 4 ranks; this "
      "rank joined -> 3); rolled back to step 20; 1234 bytes of state from rank 0 within 0.010 s of the link; "
      "recovered in 0.100 s");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->generation, 2);
  EXPECT_THAT(l->members, ElementsAre(0, 1, 3, 2));
}

TEST(SfrunElasticLines, AJoinLineIsNoMembershipLine) {
  EXPECT_FALSE(parse_elastic_line("shardflow elastic: join generation 1 at ipc:///tmp/x/y"));
  EXPECT_FALSE(parse_elastic_line("[rank 0] shardflow elastic: join generation 2 at tcp://10.1.2.3:41234"));
  EXPECT_FALSE(parse_join_line(kLine));
}

TEST(SfrunElasticJoinLines, ReadsGenerationAndAddress) {
  const auto l = parse_join_line("shardflow elastic: join generation 1 at tcp://10.1.2.3:41234");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->generation, 1);
  EXPECT_EQ(l->address, "tcp://10.1.2.3:41234");
  const auto ipc = parse_join_line("shardflow elastic: join generation 12 at ipc:///tmp/x/y");
  ASSERT_TRUE(ipc);
  EXPECT_EQ(ipc->generation, 12);
  EXPECT_EQ(ipc->address, "ipc:///tmp/x/y");
}

TEST(SfrunElasticJoinLines, APrefixBeforeTheLineAndBlanksAfterIt) {
  const auto l = parse_join_line("[12:00:00] I rank 0: shardflow elastic: join generation 3 at tcp://h:5 \t\r");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->generation, 3);
  EXPECT_EQ(l->address, "tcp://h:5");
}

TEST(SfrunElasticJoinLines, MalformedLinesAreNot) {
  for (const char* s : {"", "rank 0 step 3", "shardflow elastic: join generation",
                        "shardflow elastic: join generation 1",
                        "shardflow elastic: join generation 1 at", "shardflow elastic: join generation 1 at ",
                        "shardflow elastic: join generation x at tcp://h:5",
                        "shardflow elastic: join generation -1 at tcp://h:5",
                        "shardflow elastic: join generation +1 at tcp://h:5",
                        "shardflow elastic: join generation 99999999999 at tcp://h:5",
                        "shardflow elastic: join generation 1: at tcp://h:5",
                        "shardflow elastic: join generation 1 at  tcp://h:5",
                        "shardflow elastic: join generation 1 on tcp://h:5",
                        "shardflow elastic: join generation 1at tcp://h:5",
                        // not an endpoint
                        "shardflow elastic: join generation 1 at 10.1.2.3:41234",
                        "shardflow elastic: join generation 1 at tcp://",
                        "shardflow elastic: join generation 1 at ://h",
                        "shardflow elastic: join generation 1 at t/p://h:5",
                        // something after the address: not the library's line, so no address is trusted from it
                        "shardflow elastic: join generation 1 at tcp://h:5 (open)",
                        "shardflow elastic: join generation 1 at tcp://h:5; members 0,1",
                        "shardflow elastic: generation 1 at tcp://h:5"})
    EXPECT_FALSE(parse_join_line(s)) << s;
}

TEST(SfrunElasticJoinLines, ADoorOfANewerWorldElsewhereMeansTheGivenOneIsGone) {
  const JoinLine given{1, "tcp://10.1.2.3:41234"};
  // Rank 0 died; the next world's rank 0 opened its own door.
  EXPECT_TRUE(door_is_gone(given, {2, "tcp://10.1.2.4:5000"}));
  EXPECT_TRUE(door_is_gone(given, {7, "ipc:///tmp/x/door"}));
  EXPECT_TRUE(door_is_gone(given, {2, "tcp://10.1.2.3:41235"}));  // the same host, another port: another door
  // Rank 0 stays rank 0 and keeps its door from world to world: the request waiting there is still held.
  EXPECT_FALSE(door_is_gone(given, {2, "tcp://10.1.2.3:41234"}));
  EXPECT_FALSE(door_is_gone(given, {5, "tcp://10.1.2.3:41234"}));
  // The door it was given, or an older or same-generation one, is no newer world's.
  EXPECT_FALSE(door_is_gone(given, given));
  EXPECT_FALSE(door_is_gone(given, {1, "tcp://10.1.2.4:5000"}));
  EXPECT_FALSE(door_is_gone(given, {0, "tcp://10.1.2.4:5000"}));
}

TEST(SfrunElasticJoinLines, TheDoorsOfParsedLinesCompareAsGiven) {
  // As the supervisor has them: the door a replacement was given, the newest line's.
  const auto given = parse_join_line("[I rank 0] shardflow elastic: join generation 1 at ipc:///tmp/j/door.1");
  const auto kept = parse_join_line("[I rank 0] shardflow elastic: join generation 2 at ipc:///tmp/j/door.1 \r");
  const auto moved = parse_join_line("[I rank 0] shardflow elastic: join generation 2 at ipc:///tmp/j/door.2");
  ASSERT_TRUE(given && kept && moved);
  EXPECT_FALSE(door_is_gone(*given, *kept));
  EXPECT_TRUE(door_is_gone(*given, *moved));
}

TEST(SfrunElasticReadyLines, ARankSaysItTrainsElastic) {
  EXPECT_TRUE(is_elastic_ready_line("shardflow elastic: rank 2 of 4 trains elastic (2:4)"));
  EXPECT_TRUE(is_elastic_ready_line("[I rank 2] shardflow elastic: rank 2 of 4 trains elastic (2:4)"));
  EXPECT_FALSE(is_elastic_ready_line("shardflow elastic: rank x of 4 trains elastic (2:4)"));
  EXPECT_FALSE(is_elastic_ready_line("shardflow elastic: rank 2 of 4 trains (2:4)"));
  EXPECT_FALSE(is_elastic_ready_line(kLine));
  EXPECT_FALSE(is_elastic_ready_line("epoch: 1 step: 2, loss is 2.3"));
}

TEST(SfrunElasticMembership, KnowsWhenARankHasSaidItTrainsElastic) {
  ElasticMembership m(4);
  EXPECT_FALSE(m.announced());
  EXPECT_EQ(m.on_line("epoch: 1 step: 1, loss is 2.3"), "");
  EXPECT_FALSE(m.announced());
  EXPECT_EQ(m.on_line("shardflow elastic: rank 0 of 4 trains elastic (2:4)"), "");  // not shown
  EXPECT_TRUE(m.announced());
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

TEST(SfrunElasticMembership, ARankThatLeftIsAMemberAgainWhenAListNamesIt) {
  ElasticMembership m(4);
  EXPECT_NE(m.on_line(kLine), "");  // generation 1: members 0,1,3
  EXPECT_FALSE(m.is_member(2));
  // A replacement for rank 2 joined; the list is in the order the world has its ranks, not ascending.
  EXPECT_NE(m.on_line("shardflow elastic: generation 2: joined rank 2; members 0,1,3,2 (3 -> 4 ranks; this rank 3 -> "
                      "3)"),
            "");
  EXPECT_EQ(m.generation(), 2);
  EXPECT_TRUE(m.is_member(2));
  EXPECT_THAT(m.members(), ElementsAre(0, 1, 2, 3));
  EXPECT_NE(m.on_line("shardflow elastic: generation 3: lost rank 0 (x); members 3, 2, 1 (4 -> 3 ranks)"), "");
  EXPECT_THAT(m.members(), ElementsAre(1, 2, 3));
  EXPECT_FALSE(m.is_member(0));
}

TEST(SfrunElasticMembership, KeepsTheNewestJoinLineAndShowsNone) {
  ElasticMembership m(4);
  EXPECT_FALSE(m.join_from(0));
  EXPECT_EQ(m.on_line("I shardflow elastic: join generation 1 at ipc:///tmp/a"), "");
  ASSERT_TRUE(m.join_from(1));
  EXPECT_EQ(m.join_from(1)->address, "ipc:///tmp/a");
  EXPECT_EQ(m.join_from(0)->generation, 1);
  EXPECT_FALSE(m.join_from(2));  // a door of generation 2 or later was asked for
  // An older door does not replace a newer one; one of the same generation seen later does.
  EXPECT_EQ(m.on_line("shardflow elastic: join generation 0 at ipc:///tmp/old"), "");
  EXPECT_EQ(m.join_from(0)->address, "ipc:///tmp/a");
  EXPECT_EQ(m.on_line("shardflow elastic: join generation 1 at ipc:///tmp/b"), "");
  EXPECT_EQ(m.join_from(0)->address, "ipc:///tmp/b");
  EXPECT_EQ(m.generation(), 0);  // a join line changes no membership
  EXPECT_THAT(m.members(), ElementsAre(0, 1, 2, 3));
  // A door older than the current membership is stale.
  EXPECT_NE(m.on_line("shardflow elastic: generation 2: lost rank 1 (x); members 0,2,3 (4 -> 3 ranks)"), "");
  EXPECT_FALSE(m.join_from(0));
  EXPECT_EQ(m.on_line("shardflow elastic: join generation 2 at tcp://10.0.0.1:4000"), "");
  ASSERT_TRUE(m.join_from(0));
  EXPECT_EQ(m.join_from(0)->address, "tcp://10.0.0.1:4000");
  // A garbled join line is not kept.
  EXPECT_EQ(m.on_line("shardflow elastic: join generation 5 at nowhere"), "");
  EXPECT_EQ(m.join_from(0)->generation, 2);
}

}  // namespace sfrun_elastic_lines_test
}  // namespace
}  // namespace sf::sfrun
