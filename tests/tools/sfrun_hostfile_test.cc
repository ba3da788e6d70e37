// sfrun's hostfile grammar: `host [slots=K] [addr=A]`, comments and blank lines; every bad line
// is refused naming FILE:LINE.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

#include <shardflow/core/error.h>
#include "tools/sfrun/hostfile.h"

namespace sf::sfrun {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::string& text) {
  try {
    parse_hostfile(text, "hosts");
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(SfrunHostfile, ParsesHostsSlotsAddressesAndComments) {
  const auto hosts = parse_hostfile("# cluster\nnode1 slots=4\n\n  node2   slots=2 addr=10.0.0.2  # two\nnode3\n", "h");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].host, "node1");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[0].addr, "");
  EXPECT_EQ(hosts[0].line, 2);
  EXPECT_EQ(hosts[1].host, "node2");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[1].addr, "10.0.0.2");
  EXPECT_EQ(hosts[1].line, 4);
  EXPECT_EQ(hosts[2].slots, 1);
}

TEST(SfrunHostfile, RefusesBadLinesNamingFileAndLine) {
  EXPECT_THAT(error_of("a slots=2\nb slots=zero\n"), HasSubstr("hosts:2: slots=zero is not a whole number"));
  EXPECT_THAT(error_of("a slots=0\n"), HasSubstr("hosts:1: slots=0"));
  EXPECT_THAT(error_of("a slots=-3\n"), HasSubstr("hosts:1: slots=-3"));
  EXPECT_THAT(error_of("a\n\nb cpus=2\n"), HasSubstr("hosts:3: unknown key 'cpus'"));
  EXPECT_THAT(error_of("a slots 2\n"), HasSubstr("hosts:1: 'slots' is not key=value"));
  EXPECT_THAT(error_of("slots=2\n"), HasSubstr("hosts:1: 'slots=2' is not a host name"));
  EXPECT_THAT(error_of("a addr=\n"), HasSubstr("hosts:1: addr= needs an address"));
  EXPECT_THAT(error_of("a\nb\na slots=2\n"), HasSubstr("hosts:3: host 'a' is listed twice"));
  EXPECT_THAT(error_of("# nothing\n\n"), HasSubstr("hosts: names no host"));
}

TEST(SfrunHostfile, MissingFileIsAnIoError) {
  EXPECT_THROW(read_hostfile("/nonexistent/sfrun-hosts"), IoError);
}

std::string read_error_of(const std::string& path) {
  try {
    read_hostfile(path);
  } catch (const IoError& e) {
    return e.what();
  }
  return "no error";
}

// An endless device and a huge file are refused before reading (they used to end in bad_alloc).
TEST(SfrunHostfile, EndlessOrHugeFilesAreRefusedBeforeReading) {
  EXPECT_EQ(read_error_of("/dev/zero"), "hostfile /dev/zero: cannot read it: not a regular file");
  const std::string huge = ::testing::TempDir() + "sfrun_huge_hosts";
  {
    std::FILE* f = std::fopen(huge.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  ASSERT_EQ(::truncate(huge.c_str(), off_t{1} << 33), 0);
  EXPECT_EQ(read_error_of(huge), "hostfile " + huge + ": 8589934592 bytes, more than the 1048576 allowed");
  std::remove(huge.c_str());
}

TEST(SfrunHostfile, TooManyLinesAreRefused) {
  std::string text;
  for (int i = 0; i <= kMaxHostfileLines; ++i) text += "\n";
  EXPECT_THAT(error_of(text + "a\n"), HasSubstr("hosts: more than 65536 lines"));
}

// A line of 1 MB (a host name, a key, a value) is named by its head: the error stays one line
// under 400 bytes and still says FILE:LINE and the rule.
TEST(SfrunHostfile, AHugeLineGivesAShortOneLineError) {
  const std::string mb(1 << 20, 'x');
  for (const std::string& text : {"a\n" + mb + "=1\n", "a slots=" + mb + "\n", "a " + mb + "\n", "a\na " + mb + "=2\n",
                                  "a\n" + mb + "\n" + mb + "\n"}) {
    const std::string m = error_of(text);
    EXPECT_EQ(m.find('\n'), std::string::npos);
    EXPECT_LT(m.size(), 400u) << m;
    EXPECT_THAT(m, testing::MatchesRegex("hosts:[0-9]: .*(host|key|slots|twice|whole).*")) << m;
    EXPECT_THAT(m, HasSubstr("more bytes")) << m;
  }
}

TEST(SfrunHostfile, AHostNameWithControlCharactersStaysOneLine) {
  const std::string m = error_of("a\xff\x1b[2J\na\xff\x1b[2J\n");
  EXPECT_THAT(m, HasSubstr("host 'a\\xff\\x1b[2J' is listed twice")) << m;
}

}  // namespace
}  // namespace sf::sfrun
