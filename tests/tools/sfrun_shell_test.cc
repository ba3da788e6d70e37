// sfrun's shell words: quoting that survives any POSIX shell, --agent splitting, and the
// agent contract ({host} replaced or the host appended, then one shell command line).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <shardflow/core/error.h>
#include "tools/sfrun/shell.h"

namespace sf::sfrun {
namespace {

using ::testing::ElementsAre;

// What `sh -c LINE` prints.
std::string run_sh(const std::string& line) {
  FILE* p = ::popen(("sh -c " + shell_quote(line)).c_str(), "r");
  std::string out;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(SfrunShell, QuotedWordsComeBackUnchanged) {
  const std::vector<std::string> words = {"plain", "two words", "it's", "$HOME", "`x`", "a\"b", "", "back\\slash"};
  EXPECT_EQ(run_sh("printf '%s|' " + shell_join(words)), "plain|two words|it's|$HOME|`x`|a\"b||back\\slash|");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

TEST(SfrunShell, SplitsAgentWords) {
  EXPECT_THAT(split_words("ssh -o BatchMode=yes"), ElementsAre("ssh", "-o", "BatchMode=yes"));
  EXPECT_THAT(split_words("  ip netns exec {host}  sh -c "), ElementsAre("ip", "netns", "exec", "{host}", "sh", "-c"));
  EXPECT_THAT(split_words("ssh -o 'ProxyCommand=ssh gw -W %h:%p' \"a b\"c"),
              ElementsAre("ssh", "-o", "ProxyCommand=ssh gw -W %h:%p", "a bc"));
  EXPECT_THROW(split_words("ssh 'unterminated"), InvalidArgument);
  EXPECT_THROW(split_words("   "), InvalidArgument);
}

TEST(SfrunShell, AgentArgvPlacesHostAndCommandLine) {
  EXPECT_THAT(agent_argv("ssh -o BatchMode=yes", "node1", "echo hi"),
              ElementsAre("ssh", "-o", "BatchMode=yes", "node1", "echo hi"));
  EXPECT_THAT(agent_argv("ip netns exec {host} sh -c", "ns1", "echo hi"),
              ElementsAre("ip", "netns", "exec", "ns1", "sh", "-c", "echo hi"));
  EXPECT_THAT(agent_argv("x --to={host}:{host}", "h{host}", "c"), ElementsAre("x", "--to=h{host}:h{host}", "c"));
  EXPECT_EQ(agent_words("ip netns exec {host} sh -c", "ns1"), "ip netns exec ns1 sh -c");
}

}  // namespace
}  // namespace sf::sfrun
