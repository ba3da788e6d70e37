#include "tools/sfrun/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include <shardflow/core/error.h>

extern char** environ;

namespace sf::sfrun {

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

namespace {

void make_pipe(int fds[2]) {
  SF_ENFORCE(::pipe2(fds, O_CLOEXEC) == 0, Error, "pipe: {}", std::strerror(errno));
}

std::vector<std::string> merged_env(const std::vector<std::string>& set) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    env[kv.substr(0, kv.find('='))] = kv;
  }
  for (const auto& kv : set) env[kv.substr(0, kv.find('='))] = kv;
  std::vector<std::string> out;
  for (auto& [k, kv] : env) out.push_back(kv);
  return out;
}

// In the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, int in, int out, int err, int report,
                             pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // sfrun died before prctl took hold
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) ::signal(s, SIG_DFL);
  if (in < 0) in = ::open("/dev/null", O_RDONLY);
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  ::execvpe(argv[0], argv, envp);
  const int e = errno;
  (void)!::write(report, &e, sizeof(e));
  ::_exit(127);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Child spawn_child(const SpawnSpec& spec) {
  SF_ENFORCE(!spec.argv.empty(), InvalidArgument, "spawn_child: empty command");
  std::vector<std::string> env = merged_env(spec.env_set);
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int out[2], err[2], report[2], in[2] = {-1, -1};
  make_pipe(out);
  make_pipe(err);
  make_pipe(report);
  if (spec.stdin_pipe) make_pipe(in);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(argv.data(), envp.data(), in[0], out[1], err[1], report[1], parent);
  const int fork_errno = errno;
  ::close(out[1]);
  ::close(err[1]);
  ::close(report[1]);
  if (in[0] >= 0) ::close(in[0]);
  if (pid < 0) {
    for (int fd : {out[0], err[0], report[0], in[1]})
      if (fd >= 0) ::close(fd);
    SF_THROW(Error, "cannot start {}: fork: {}", spec.argv[0], std::strerror(fork_errno));
  }
  ::setpgid(pid, pid);  // also here, so the group exists before the caller signals it
  int exec_errno = 0;
  ssize_t n;
  do n = ::read(report[0], &exec_errno, sizeof(exec_errno));
  while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == sizeof(exec_errno)) {
    ::waitpid(pid, nullptr, 0);
    for (int fd : {out[0], err[0], in[1]})
      if (fd >= 0) ::close(fd);
    SF_THROW(Error, "cannot start {}: {}", spec.argv[0], std::strerror(exec_errno));
  }
  set_nonblocking(out[0]);
  set_nonblocking(err[0]);
  return Child{.pid = pid, .out = out[0], .err = err[0], .in = in[1]};
}

std::vector<Captured> run_all_captured(const std::vector<std::vector<std::string>>& commands,
                                       std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  std::vector<Captured> results(commands.size());
  std::vector<Child> children(commands.size());
  for (size_t i = 0; i < commands.size(); ++i) {
    try {
      children[i] = spawn_child({.argv = commands[i], .env_set = {}, .stdin_pipe = false});
    } catch (const Error& e) {
      results[i].status = 127 << 8;
      results[i].err = e.what();
    }
  }
  for (size_t i = 0; i < commands.size(); ++i) {
    Child& c = children[i];
    if (c.pid < 0) continue;
    Captured& r = results[i];
    while (c.out >= 0 || c.err >= 0) {
      const auto left = std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
      pollfd fds[2] = {{c.out, POLLIN, 0}, {c.err, POLLIN, 0}};
      const int ready = ::poll(fds, 2, static_cast<int>(left));
      if (ready < 0 && errno != EINTR) break;
      if (ready == 0 && left == 0) {
        r.timed_out = true;
        break;
      }
      for (int k = 0; k < 2; ++k) {
        int& fd = k == 0 ? c.out : c.err;
        if (fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n > 0) (k == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
        else if (n == 0 || errno != EAGAIN) close_fd(fd);
      }
    }
    if (r.timed_out) ::kill(-c.pid, SIGKILL);
    close_fd(c.out);
    close_fd(c.err);
    while (::waitpid(c.pid, &r.status, 0) < 0 && errno == EINTR) {
    }
  }
  return results;
}

std::string describe_status(int s) {
  if (WIFEXITED(s)) return fmt::format("exited with code {}", WEXITSTATUS(s));
  if (WIFSIGNALED(s)) return fmt::format("exited with signal {} ({})", WTERMSIG(s), ::strsignal(WTERMSIG(s)));
  return fmt::format("ended with wait status {}", s);
}

}  // namespace sf::sfrun
