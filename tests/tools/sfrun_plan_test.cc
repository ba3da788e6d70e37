// sfrun's plan: ranks fill hosts in hostfile order up to slots and --nproc-per-node, local
// ranks count per host, the rendezvous is rank 0's host, and too few slots are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/core/error.h>
#include "tools/sfrun/plan.h"

namespace sf::sfrun {
namespace {

using ::testing::HasSubstr;

Options opts(int n) {
  Options o;
  o.n = n;
  o.command = {"prog"};
  o.hostfile = "hosts";
  return o;
}

const IsLocalHost kNoneLocal = [](const std::string&) { return false; };

TEST(SfrunPlan, WithoutHostfileEveryRankRunsHere) {
  Options o = opts(3);
  o.hostfile.clear();
  const Plan p = make_plan(o, {}, [](const std::string& h) { return h == "localhost"; });
  ASSERT_EQ(p.hosts.size(), 1u);
  EXPECT_TRUE(p.hosts[0].local);
  EXPECT_EQ(p.master_addr, "127.0.0.1");
  EXPECT_TRUE(p.master_local);
  ASSERT_EQ(p.ranks.size(), 3u);
  EXPECT_EQ(p.ranks[2].local_rank, 2);
  EXPECT_EQ(p.ranks[2].local_size, 3);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(SfrunPlan, FillsHostsInOrderUpToSlotsAndNprocPerNode) {
  Options o = opts(5);
  o.nproc_per_node = 3;
  const std::vector<HostEntry> hosts = {{"a", 4, "10.0.0.1", 1}, {"b", 4, "10.0.0.2", 2}, {"c", 4, "", 3}};
  const Plan p = make_plan(o, hosts, kNoneLocal);
  ASSERT_EQ(p.hosts.size(), 2u);  // c gets nothing
  EXPECT_EQ(p.hosts[0].ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.hosts[1].ranks, (std::vector<int>{3, 4}));
  EXPECT_EQ(p.ranks[4].host, 1);
  EXPECT_EQ(p.ranks[4].local_rank, 1);
  EXPECT_EQ(p.ranks[4].local_size, 2);
  EXPECT_EQ(p.master_addr, "10.0.0.1");
  EXPECT_FALSE(p.master_local);
  EXPECT_FALSE(p.all_local());
  Plan q = p;
  q.master_port = 29500;
  EXPECT_EQ(q.rendezvous(), "tcp://10.0.0.1:29500");
}

TEST(SfrunPlan, RefusesTooFewSlots) {
  const std::vector<HostEntry> hosts = {{"a", 2, "10.0.0.1", 1}, {"b", 1, "10.0.0.2", 2}};
  try {
    make_plan(opts(4), hosts, kNoneLocal);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("-n 4 needs 4 slots, but hosts offers only 3 (a 2, b 1)"));
  }
  Options o = opts(4);
  o.nproc_per_node = 1;
  EXPECT_THROW(make_plan(o, hosts, kNoneLocal), InvalidArgument);
  o.hostfile.clear();
  o.nproc_per_node = 2;
  try {
    make_plan(o, {}, kNoneLocal);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs 2 hosts, but without --hostfile"));
  }
}

TEST(SfrunPlan, MasterAddressFromOptionOrHostfile) {
  Options o = opts(2);
  o.master_addr = "10.9.9.9";
  const Plan p = make_plan(o, {{"a", 2, "10.0.0.1", 1}}, kNoneLocal);
  EXPECT_EQ(p.master_addr, "10.9.9.9");
  o.master_addr = "no-such-host.invalid";
  EXPECT_THROW(make_plan(o, {{"a", 2, "10.0.0.1", 1}}, kNoneLocal), InvalidArgument);
}

TEST(SfrunPlan, WarnsWhenRemoteRanksWouldMeetOnLoopback) {
  const std::vector<HostEntry> hosts = {{"localhost", 1, "", 1}, {"b", 1, "10.0.0.2", 2}};
  const Plan p = make_plan(opts(2), hosts, [](const std::string& h) { return h == "localhost"; });
  EXPECT_EQ(p.master_addr, "127.0.0.1");
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_THAT(p.warnings[0], HasSubstr("loopback address, but ranks run on other hosts"));
}

TEST(SfrunPlan, FormatShowsEveryRank) {
  Plan p = make_plan(opts(3), {{"a", 2, "10.0.0.1", 1}, {"b", 2, "10.0.0.2", 2}}, kNoneLocal);
  p.master_port = 1234;
  const std::string text = format_plan(p, "log_output/7", [](const std::string& h) { return "ssh " + h; });
  EXPECT_THAT(text, HasSubstr("3 ranks over zmq on 2 hosts; rendezvous tcp://10.0.0.1:1234"));
  EXPECT_THAT(text, HasSubstr("host b (addr 10.0.0.2): ranks 2..2, started through `ssh b`"));
  EXPECT_THAT(text, HasSubstr("rank 0 -> host a local rank 0 of 2, binds 10.0.0.1:1234"));
  EXPECT_THAT(text, HasSubstr("rank 2 -> host b local rank 0 of 1\n"));
}

// 65536 hosts with too few slots in all: the first hosts and a count, on one short line.
TEST(SfrunPlan, TooFewSlotsOverManyHostsIsOneShortLine) {
  std::vector<HostEntry> hosts;
  for (int i = 0; i < 65536; ++i) hosts.push_back({std::string("h").append(std::to_string(i)), 1, "", i + 1});  // not "h" + s: GCC 12 -Wrestrict
  try {
    make_plan(opts(100000), hosts, kNoneLocal);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_LT(m.size(), 400u) << m;
    EXPECT_THAT(m, HasSubstr("offers only 65536 (h0 1, h1 1, h2 1, h3 1, h4 1, h5 1, h6 1, h7 1, ... 65528 more hosts)"));
  }
}

}  // namespace
}  // namespace sf::sfrun
