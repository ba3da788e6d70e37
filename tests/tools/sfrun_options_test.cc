// sfrun's command line: the program and its arguments with or without `--`, its options kept
// away from sfrun's, and bad values refused with the rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/core/error.h>
#include "tools/sfrun/options.h"

namespace sf::sfrun {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace sfrun_options_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string error_of(const std::vector<std::string>& args) {
  try {
    parse_options(args);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}

TEST(SfrunOptions, ProgramAfterDoubleDash) {
  const Options o = parse_options({"-n", "4", "--tee", "--job-id", "7", "--", "./train", "--n", "3", "-n", "x"});
  EXPECT_EQ(o.n, 4);
  EXPECT_TRUE(o.tee);
  EXPECT_EQ(o.job_id, "7");
  EXPECT_EQ(o.transport, "zmq");
  EXPECT_EQ(o.log_dir, "log_output");
  EXPECT_THAT(o.command, ElementsAre("./train", "--n", "3", "-n", "x"));
}

TEST(SfrunOptions, ProgramWithoutDoubleDash) {
  const Options o = parse_options({"-n", "2", "--hostfile", "h", "./train", "--epochs", "1"});
  EXPECT_EQ(o.hostfile, "h");
  EXPECT_THAT(o.command, ElementsAre("./train", "--epochs", "1"));
}

TEST(SfrunOptions, EveryOption) {
  const Options o = parse_options({"-n", "8", "--nproc-per-node", "4", "--transport", "mpi", "--log-dir", "L",
                                   "--timeout", "2.5", "--dry-run", "--agent", "ip netns exec {host} sh -c",
                                   "--master-addr", "10.0.0.1", "--master-port", "29500", "--grace", "1",
                                   "--probe-timeout", "3", "--", "p"});
  EXPECT_EQ(*o.nproc_per_node, 4);
  EXPECT_EQ(o.transport, "mpi");
  EXPECT_EQ(o.log_dir, "L");
  EXPECT_DOUBLE_EQ(*o.timeout, 2.5);
  EXPECT_TRUE(o.dry_run);
  EXPECT_EQ(o.agent, "ip netns exec {host} sh -c");
  EXPECT_EQ(o.master_addr, "10.0.0.1");
  EXPECT_EQ(*o.master_port, 29500);
  EXPECT_DOUBLE_EQ(o.grace, 1);
  EXPECT_DOUBLE_EQ(o.probe_timeout, 3);
}

TEST(SfrunOptions, RefusesBadValues) {
  EXPECT_THAT(error_of({"-n", "0", "--", "p"}), HasSubstr("-n 0: a job needs at least one rank"));
  EXPECT_THAT(error_of({"-n", "-2", "--", "p"}), HasSubstr("-n -2"));
  EXPECT_THAT(error_of({"--", "p"}), HasSubstr("-n"));
  EXPECT_THAT(error_of({"-n", "2"}), HasSubstr("no program given"));
  EXPECT_THAT(error_of({"-n", "2", "--"}), HasSubstr("no program given"));
  EXPECT_THAT(error_of({"-n", "2", "--transport", "tcp", "p"}), HasSubstr("--transport tcp: must be zmq or mpi"));
  EXPECT_THAT(error_of({"-n", "2", "--timeout", "0", "p"}), HasSubstr("--timeout 0"));
  // Seconds beyond 1e7 would overflow their conversion to milliseconds.
  EXPECT_THAT(error_of({"-n", "2", "--grace", "1e300", "p"}), HasSubstr("--grace 1e+300: must be in 0..10000000"));
  EXPECT_THAT(error_of({"-n", "2", "--probe-timeout", "inf", "p"}), HasSubstr("--probe-timeout inf"));
  EXPECT_THAT(error_of({"-n", "2", "--master-port", "70000", "p"}), HasSubstr("--master-port 70000"));
  EXPECT_THAT(error_of({"-n", "2", "--nproc-per-node", "0", "p"}), HasSubstr("--nproc-per-node 0"));
  EXPECT_THAT(error_of({"-n", "2", "--job-id", "a/b", "p"}), HasSubstr("--job-id 'a/b'"));
  EXPECT_THAT(error_of({"-n", "two", "p"}), HasSubstr("two"));
}

TEST(SfrunOptions, HelpIsNotAnError) {
  EXPECT_THROW(parse_options({"--help"}), HelpRequested);
  EXPECT_THAT(usage(), HasSubstr("Usage: sfrun -n N [options] [--] PROGRAM ARGS..."));
}

// An argument of 1 MB (CLI11 quotes it in its error) gives one short line.
TEST(SfrunOptions, AHugeArgumentGivesAShortOneLineError) {
  const std::string mb(1 << 20, 'v');
  for (const auto& args : {std::vector<std::string>{"-n", mb, "--", "p"},
                           std::vector<std::string>{"-n", "2", "--transport", mb + "\n", "--", "p"},
                           std::vector<std::string>{"-n", "2", "--job-id", "a/" + mb, "--", "p"}}) {
    const std::string m = error_of(args);
    EXPECT_EQ(m.find('\n'), std::string::npos);
    EXPECT_LT(m.size(), 400u) << m;
    EXPECT_THAT(m, HasSubstr("more bytes")) << m;
  }
}

}  // namespace sfrun_options_test
}  // namespace
}  // namespace sf::sfrun
