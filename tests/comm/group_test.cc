// Tests for groups (comm/group.h): world and subgroup numbering, create_group's refusals
// (seed 000's rules), ids equal across ranks and distinct across groups, and tags that keep
// groups, sequence numbers and slots apart.
#include <shardflow/comm/group.h>

#include <gtest/gtest.h>

#include <string>

#include <shardflow/comm/inproc/transport.h>

namespace sf::comm {
namespace {

void expect_invalid(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    FAIL() << "no exception; expected one mentioning '" << needle << "'";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Group, WorldGroupHoldsEveryRank) {
  auto world = make_inproc_world(4);
  Group g = world_group(world[2]);
  EXPECT_EQ(g.name(), "world");
  EXPECT_EQ(g.size(), 4);
  EXPECT_EQ(g.rank(), 2);
  EXPECT_EQ(g.world_rank(3), 3);
  EXPECT_EQ(g.id(), 0u);
}

TEST(Group, SubgroupNumbersRanksInListOrder) {
  auto world = make_inproc_world(6);
  Group g4 = create_group(world[4], "g", {1, 4, 3});
  Group g1 = create_group(world[1], "g", {1, 4, 3});
  EXPECT_EQ(g4.size(), 3);
  EXPECT_EQ(g4.rank(), 1);
  EXPECT_EQ(g1.rank(), 0);
  EXPECT_EQ(g4.world_rank(2), 3);
  EXPECT_EQ(g4.group_rank_of(3), 2);
  EXPECT_EQ(g4.group_rank_of(0), -1);
  EXPECT_EQ(g4.id(), g1.id()) << "members must agree on the id without talking";
  EXPECT_NE(g4.id(), create_group(world[4], "h", {1, 4, 3}).id());
  EXPECT_NE(g4.id(), 0u);
}

TEST(Group, CreateGroupRefusesBadRankLists) {
  auto world = make_inproc_world(4);
  expect_invalid([&] { create_group(world[0], "g", {0, 4}); }, "rank 4 is outside the world of 4");
  expect_invalid([&] { create_group(world[0], "g", {0, -1}); }, "rank -1 is outside");
  expect_invalid([&] { create_group(world[0], "g", {0, 2, 2}); }, "rank 2 is listed twice");
  expect_invalid([&] { create_group(world[0], "g", {}); }, "'g'): the rank list is empty");
  expect_invalid([&] { create_group(world[0], "g", {1, 2}); }, "this rank 0 is not a member");
  expect_invalid([&] { create_group(world[0], "", {0}); }, "name is empty");
  expect_invalid([&] { create_group(world[0], "world", {0}); }, "reserved");
}

TEST(Group, UndefinedGroupIsRefused) {
  Group g;
  EXPECT_FALSE(g.defined());
  EXPECT_THROW(g.size(), InvalidArgument);
}

TEST(Group, SequenceNumbersAreConsecutivePerGroupEndpoint) {
  auto world = make_inproc_world(2);
  Group a = world_group(world[0]);
  Group copy = a;  // shares the counter
  EXPECT_EQ(a.next_sequence(), 0u);
  EXPECT_EQ(copy.next_sequence(), 1u);
  EXPECT_EQ(world_group(world[0]).next_sequence(), 0u);
}

TEST(Group, TagsSeparateGroupsSequencesSlotsAndPointToPoint) {
  EXPECT_NE(collective_tag(1, 5, 0), collective_tag(2, 5, 0));
  EXPECT_NE(collective_tag(1, 5, 0), collective_tag(1, 6, 0));
  EXPECT_NE(collective_tag(1, 5, 0), collective_tag(1, 5, 1));
  EXPECT_NE(collective_tag(1, 0, 5), p2p_tag(1, 5));
  EXPECT_NE(p2p_tag(1, 5), p2p_tag(2, 5));
  EXPECT_NE(collective_tag(1, 0xffffffffu, 255), collective_tag(2, 0, 0));
}

}  // namespace
}  // namespace sf::comm
