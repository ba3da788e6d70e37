// Tests for the log sink (train/log_sink.h): rank threads logging at once produce only whole
// lines; "rank0" prints rank 0's lines in the seed's format byte for byte, "all" every rank's
// prefixed, "files" none on stdout; rank files take every rank's lines; a thread with no rank
// prints unprefixed; --log-ranks strings parse and a bad one is refused in one line.
#include <shardflow/train/log_sink.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <shardflow/core/rng.h>
#include <shardflow/train/callback.h>
#include <shardflow/train/mlp.h>
#include <shardflow/train/model.h>
#include <shardflow/train/rank_log.h>
#include "tests/train/parallel_fixture.h"
#include "tests/train/toy_data.h"

namespace sf::traintest {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

class LogSink : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("sf_log_sink_" + std::to_string(::getpid()) + "_" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    set_log_stdout(out_);
  }
  void TearDown() override {
    set_log_ranks(LogRanks::kRank0);
    set_log_stdout(std::cout);
    std::filesystem::remove_all(dir_);
  }
  static std::string read(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  std::string dir_;
  std::ostringstream out_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST_F(LogSink, ManyRanksLoggingAtOnceWriteOnlyWholeLines) {
  set_log_ranks(LogRanks::kAll);
  constexpr int kRanks = 8, kLines = 300;
  run_world(kRanks, Wire::kInproc, [](int) {
    for (int i = 1; i <= kLines; ++i) log_line(fmt::format("epoch: 1 step: {}, loss is 2.2421417236328125", i));
  });
  const std::regex pattern(R"(\[rank (\d+)\] epoch: 1 step: (\d+), loss is 2\.2421417236328125)");
  std::map<int, std::vector<int>> steps;
  const std::vector<std::string> lines = lines_of(out_.str());
  ASSERT_EQ(lines.size(), static_cast<size_t>(kRanks * kLines));
  for (const std::string& line : lines) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, pattern)) << "a mixed line: '" << line << "'";
    steps[std::stoi(m[1])].push_back(std::stoi(m[2]));
  }
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(steps[r].size(), static_cast<size_t>(kLines)) << "rank " << r;
    for (int i = 0; i < kLines; ++i) EXPECT_EQ(steps[r][i], i + 1) << "rank " << r << ": in order";
  }
}

// Each rank trains its own network with LossMonitor's default (the sink); returns what rank 0's
// loss lines must be, from its recorded losses.
std::string train_on_two_ranks(int64_t per_print) {
  std::vector<std::vector<float>> losses(2);
  run_world(2, Wire::kInproc, [&](int rank) {
    set_seed(3);
    nn::Mlp net(kIn, {8}, kClasses);
    Model model(net, nn::CrossEntropyLoss(), nn::SGD(net.trainable_params(), 0.1f));
    auto log = std::make_shared<StepLog>(ParameterList{});
    model.train(1, random_rows(48, 10 + static_cast<uint64_t>(rank)).batch(8),
                {std::make_shared<LossMonitor>(per_print), log});
    losses[rank] = log->losses;
  });
  set_seed(0);
  std::string want;
  for (size_t s = 0; s < losses[0].size(); ++s)
    if ((s + 1) % per_print == 0) want += fmt::format("epoch: 1 step: {}, loss is {}\n", s + 1, format_loss(losses[0][s]));
  EXPECT_NE(losses[0], losses[1]) << "the ranks' lines must differ for the test to tell them apart";
  return want;
}

TEST_F(LogSink, Rank0PrintsRankZerosLinesInTheSeedsFormatByteForByte) {
  const std::string want = train_on_two_ranks(2);
  ASSERT_EQ(lines_of(want).size(), 3u);
  EXPECT_EQ(out_.str(), want);
}

TEST_F(LogSink, Rank0WithAJobDirectoryPutsEveryRanksLinesInItsFile) {
  set_log_ranks(LogRanks::kRank0, dir_);
  const std::string want = train_on_two_ranks(3);
  EXPECT_EQ(out_.str(), want);
  EXPECT_EQ(read(dir_ + "/rank.0/stdout"), want);
  const std::vector<std::string> rank1 = lines_of(read(dir_ + "/rank.1/stdout"));
  ASSERT_EQ(rank1.size(), 2u);
  EXPECT_THAT(rank1[0], ::testing::StartsWith("epoch: 1 step: 3, loss is "));
}

TEST_F(LogSink, FilesModePrintsNothingPerRankAndRankLogSharesTheFile) {
  set_log_ranks(LogRanks::kFiles, dir_);
  run_world(3, Wire::kInproc, [&](int rank) {
    RankLog log(dir_);
    log_line(fmt::format("from the sink {}", rank));
    log.out() << "from RankLog " << rank << std::endl;
  });
  EXPECT_EQ(out_.str(), "");
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(read(fmt::format("{}/rank.{}/stdout", dir_, r)), fmt::format("from the sink {}\nfrom RankLog {}\n", r, r));
}

TEST_F(LogSink, AThreadWithoutARankOrAOneRankWorldPrintsUnprefixed) {
  set_log_ranks(LogRanks::kAll);
  log_line("no rank");
  run_world(1, Wire::kInproc, [](int) { log_line("one rank"); });
  set_log_ranks(LogRanks::kFiles);
  log_line("still on stdout");
  EXPECT_EQ(out_.str(), "no rank\none rank\nstill on stdout\n");
}

TEST_F(LogSink, AStreamGivenToLossMonitorGetsItsLinesWhole) {
  std::ostringstream mine;
  LossMonitor monitor(1, mine);
  RunContext ctx;
  ctx.epoch = 2;
  ctx.step_in_epoch = 7;
  ctx.loss = 1.0f;
  monitor.on_step_end(ctx);
  EXPECT_EQ(mine.str(), "epoch: 2 step: 7, loss is 1.0\n");
  EXPECT_EQ(out_.str(), "");
}

TEST(LogRanksOption, ParsesItsThreeStringsAndRefusesOthersInOneLine) {
  EXPECT_EQ(parse_log_ranks("rank0"), LogRanks::kRank0);
  EXPECT_EQ(parse_log_ranks("all"), LogRanks::kAll);
  EXPECT_EQ(parse_log_ranks("files"), LogRanks::kFiles);
  for (LogRanks r : {LogRanks::kRank0, LogRanks::kAll, LogRanks::kFiles}) EXPECT_EQ(parse_log_ranks(log_ranks_name(r)), r);
  EXPECT_THAT([] { parse_log_ranks("every"); },
              ThrowsMessage<InvalidArgument>(::testing::StrEq("--log-ranks 'every': expected one of rank0, all, files")));
  EXPECT_THAT([] { parse_log_ranks("a\nb"); }, ThrowsMessage<InvalidArgument>(HasSubstr("'a\\nb'")));
}

}  // namespace
}  // namespace sf::traintest
