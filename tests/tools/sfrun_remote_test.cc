// The command lines sfrun hands an agent, run here under `sh -c` as `ip netns exec NS sh -c`
// would: the rank wrapper takes the secret from stdin, reports the program's pid first, passes
// the variables, forwards TERM, kills the program when its stdin closes, and exits with the
// program's status; the probe says whether the program exists and the port is taken.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tools/sfrun/process.h"
#include "tools/sfrun/remote.h"

namespace sf::sfrun {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Ran {
  std::string out;
  int status = -1;
};

// Runs `sh -c line`, writes `input` to its stdin (then closes it if close_stdin; a rank
// wrapper's stdin stays open while its rank runs), and collects stdout until it closes;
// `during` runs once the first line is out.
Ran run_line(const std::string& line, const std::string& input, bool close_stdin,
             const std::function<void(Child&, const std::string&)>& during = {}) {
  Child c = spawn_child({.argv = {"sh", "-c", line}, .env_set = {}, .stdin_pipe = true});
  (void)!::write(c.in, input.data(), input.size());
  if (close_stdin) close_fd(c.in);
  Ran r;
  bool called = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.out >= 0 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{c.out, POLLIN, 0};
    ::poll(&p, 1, 100);
    char buf[512];
    const ssize_t n = ::read(c.out, buf, sizeof(buf));
    if (n > 0) r.out.append(buf, static_cast<size_t>(n));
    else if (n == 0) close_fd(c.out);
    if (during && !called && r.out.find('\n') != std::string::npos) {
      called = true;
      during(c, r.out);
    }
  }
  close_fd(c.in);
  close_fd(c.out);
  close_fd(c.err);
  ::waitpid(c.pid, &r.status, 0);
  return r;
}

pid_t marker_pid(const std::string& out) {
  const std::string prefix = std::string(kPidMarker) + " ";
  EXPECT_THAT(out, StartsWith(prefix));
  return static_cast<pid_t>(std::stol(out.substr(prefix.size())));
}

TEST(SfrunRemote, WrapperPassesSecretVariablesAndStatus) {
  const std::string line = remote_rank_line({"SF_RANK=5", "SF_RENDEZVOUS=tcp://10.0.0.1:29500"},
                                            {"sh", "-c", "echo \"$SF_JOB_SECRET $SF_RANK $SF_RENDEZVOUS $PWD $1\"; exit 7",
                                             "sh", "it's an arg"},
                                            "/tmp");
  EXPECT_EQ(line.find("s3cret"), std::string::npos);
  const Ran r = run_line(line, "s3cret\n", false);
  EXPECT_GT(marker_pid(r.out), 0);
  EXPECT_THAT(r.out, HasSubstr("\ns3cret 5 tcp://10.0.0.1:29500 /tmp it's an arg\n"));
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 7);
}

TEST(SfrunRemote, WrapperWithoutSecretRefusesToStart) {
  const Ran r = run_line(remote_rank_line({}, {"echo", "started"}, "/"), "", true);
  EXPECT_EQ(r.out.find("started"), std::string::npos);
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), kNoSecretStatus);
}

TEST(SfrunRemote, ClosingStdinKillsTheProgram) {
  pid_t pid = 0;
  const Ran r = run_line(remote_rank_line({}, {"sleep", "30"}, "/"), "x\n", false, [&](Child& c, const std::string& out) {
    pid = marker_pid(out);
    close_fd(c.in);
  });
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 128 + SIGKILL);
  EXPECT_NE(::kill(pid, 0), 0);
}

TEST(SfrunRemote, TermLineIsForwarded) {
  const Ran r = run_line(remote_rank_line({}, {"sleep", "30"}, "/"), "x\n", false, [&](Child& c, const std::string&) {
    (void)!::write(c.in, "TERM\n", 5);
  });
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 128 + SIGTERM);
}

TEST(SfrunRemote, ProbeFindsProgramAndPort) {
  EXPECT_THAT(run_line(remote_probe_line("sh", "/", "127.0.0.1", 0), "", true).out, HasSubstr("@sfrun-probe ok"));
  EXPECT_THAT(run_line(remote_probe_line("/bin/sh", "/", "127.0.0.1", 0), "", true).out, HasSubstr("@sfrun-probe ok"));
  EXPECT_THAT(run_line(remote_probe_line("/no/such/prog", "/", "127.0.0.1", 0), "", true).out,
              HasSubstr("@sfrun-probe missing-program"));
  EXPECT_THAT(run_line(remote_probe_line("no-such-prog-sfrun", "/", "127.0.0.1", 0), "", true).out,
              HasSubstr("@sfrun-probe missing-program"));
  // A listening port is in use.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  const int port = ntohs(sa.sin_port);
  if (::access("/bin/bash", X_OK) == 0) {
    EXPECT_THAT(run_line(remote_probe_line("sh", "/", "127.0.0.1", port), "", true).out, HasSubstr("@sfrun-probe port-in-use"));
  }
  ::close(fd);
  EXPECT_THAT(run_line(remote_probe_line("sh", "/", "127.0.0.1", port), "", true).out, HasSubstr("@sfrun-probe ok"));
}

}  // namespace
}  // namespace sf::sfrun
