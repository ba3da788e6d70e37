// A rank's log: bytes go to rank.R/stdout and stderr as they come; --tee lines are whole and
// prefixed; the remote pid marker is taken off stdout into rank.R/pid; the last stderr line
// and the comm timeout report are kept for the summary.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tools/sfrun/rank_log.h"

namespace sf::sfrun {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SfrunRankLog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sfrun-rank-log-" + std::to_string(::getpid()));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(SfrunRankLog, WritesBytesAndKeepsLastErrorAndCommReport) {
  const std::string d = (dir_ / "rank.3").string();
  {
    RankLog log(3, d, false, false);
    log.on_stdout("epoch: 1 step: 20, ");
    log.on_stdout("loss is 2.24\npart");
    log.on_stderr("shardflow comm: rank 3: AllReduce timed out; flight recorder of group 'world' (last 2)\n");
    log.on_stderr("  seq 4 AllReduce: running for 2.0 s\nfatal: rank 1 did not take part");
    log.finish();
    EXPECT_EQ(log.last_stderr_line(), "fatal: rank 1 did not take part");
    EXPECT_THAT(log.comm_report(), ::testing::StartsWith("shardflow comm: rank 3: AllReduce timed out"));
    log.write_pid(4242);
  }
  EXPECT_EQ(slurp(d + "/stdout"), "epoch: 1 step: 20, loss is 2.24\npart");
  EXPECT_EQ(slurp(d + "/pid"), "4242\n");
}

TEST_F(SfrunRankLog, TakesThePidMarkerOffARemoteRanksStdout) {
  const std::string d = (dir_ / "rank.1").string();
  {
    RankLog log(1, d, false, true);
    log.on_stdout("@sfrun-");
    log.on_stdout("pid 777\nhello\n");
    log.finish();
    EXPECT_EQ(log.pid(), 777);
  }
  EXPECT_EQ(slurp(d + "/stdout"), "hello\n");
  EXPECT_EQ(slurp(d + "/pid"), "777\n");
}

TEST_F(SfrunRankLog, OutputWithoutMarkerIsKept) {
  const std::string d = (dir_ / "rank.2").string();
  {
    RankLog log(2, d, false, true);
    log.on_stdout("no marker here\n");
    log.finish();
  }
  EXPECT_EQ(slurp(d + "/stdout"), "no marker here\n");
}

}  // namespace
}  // namespace sf::sfrun
