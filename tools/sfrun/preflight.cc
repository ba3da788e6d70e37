#include "tools/sfrun/preflight.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include "tools/sfrun/port.h"
#include "tools/sfrun/process.h"
#include "tools/sfrun/remote.h"
#include "tools/sfrun/shell.h"

namespace sf::sfrun {

namespace {

std::string absolute(const std::string& path, const std::string& cwd) {
  return path.front() == '/' ? path : cwd + "/" + path;
}

// Empty if `path` is an executable regular file, else why not.
std::string executable_problem(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return "does not exist";
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (::access(path.c_str(), X_OK) != 0) return "is not executable";
  return {};
}

// The last few lines of an agent's stderr, for a message.
std::string tail_lines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > 3 ? lines.size() - 3 : 0; i < lines.size(); ++i)
    out += out.empty() ? lines[i] : " | " + lines[i];
  return out;
}

}  // namespace

std::string resolve_local_program(const std::string& name, const std::string& cwd) {
  SF_ENFORCE(!name.empty(), InvalidArgument, "PROGRAM is empty");
  if (name.find('/') != std::string::npos) {
    const std::string path = absolute(name, cwd);
    const std::string why = executable_problem(path);
    SF_ENFORCE(why.empty(), InvalidArgument, "PROGRAM {}: {}", brief_text(name, 160), why);
    return path;
  }
  const char* env = std::getenv("PATH");
  std::istringstream dirs(env ? env : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string path = absolute((dir.empty() ? "." : dir) + "/" + name, cwd);
    if (executable_problem(path).empty()) return path;
  }
  SF_THROW(InvalidArgument, "PROGRAM {}: no executable of that name in PATH", brief_text(name, 160));
}

Programs preflight(const Plan& plan, const Options& o, const std::string& cwd) {
  std::vector<std::string> problems;
  Programs progs;
  const std::string& name = o.command.front();
  progs.remote = name.find('/') != std::string::npos ? absolute(name, cwd) : name;
  bool any_local = false;
  for (const auto& h : plan.hosts) any_local = any_local || h.local;
  if (any_local) {
    try {
      progs.local = resolve_local_program(name, cwd);
    } catch (const InvalidArgument& e) {
      problems.push_back(e.what());
    }
  }

  const std::string port_origin = o.master_port ? fmt::format(" (--master-port {})", plan.master_port) : "";
  if (plan.master_local) {
    if (auto why = port_problem(plan.master_addr, plan.master_port))
      problems.push_back(fmt::format("rendezvous: {}{}", *why, port_origin));
  }

  std::vector<std::vector<std::string>> probes;
  std::vector<const HostPlan*> probed;
  for (size_t i = 0; i < plan.hosts.size(); ++i) {
    const HostPlan& h = plan.hosts[i];
    if (h.local) continue;
    const int port = i == 0 ? plan.master_port : 0;
    try {
      probes.push_back(agent_argv(o.agent, h.host, remote_probe_line(progs.remote, cwd, plan.master_addr, port)));
      probed.push_back(&h);
    } catch (const InvalidArgument& e) {
      problems.push_back(e.what());
      break;
    }
  }
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.probe_timeout * 1000));
  const auto results = run_all_captured(probes, timeout);
  for (size_t i = 0; i < results.size(); ++i) {
    const HostPlan& h = *probed[i];
    const Captured& r = results[i];
    const std::string host = brief_text(h.host, 60);
    const std::string via = brief_text(agent_words(o.agent, h.host), 100);
    if (r.timed_out) {
      problems.push_back(
          fmt::format("host {} is not reachable: `{}` did not answer within {} s", host, via, o.probe_timeout));
    } else if (r.out.find("@sfrun-probe missing-program") != std::string::npos) {
      problems.push_back(fmt::format("PROGRAM {}: not an executable on host {}", brief_text(progs.remote, 100), host));
    } else if (r.out.find("@sfrun-probe port-in-use") != std::string::npos) {
      problems.push_back(
          fmt::format("rendezvous: port {} on {} (host {}) is in use{}", plan.master_port, plan.master_addr, host,
                      port_origin));
    } else if (r.out.find("@sfrun-probe ok") == std::string::npos) {
      const std::string said = brief_text(tail_lines(r.err), 160);
      // An agent that took the command line for a program name did not run it in a shell.
      const bool no_shell = r.err.find("exec sh -c") != std::string::npos;
      problems.push_back(fmt::format("host {} is not reachable: `{}` {}{}{}", host, via, describe_status(r.status),
                                     said.empty() ? "" : ": " + said,
                                     no_shell ? " (the agent must run its last argument as a shell command line, "
                                                "as `ssh HOST` and `ip netns exec NS sh -c` do)"
                                              : ""));
    }
  }
  if (problems.empty()) return progs;
  if (problems.size() == 1) SF_THROW(InvalidArgument, "{}", problems.front());
  // One line however many hosts failed: the first problems, each brief, and a count.
  constexpr size_t kShown = 3;
  std::string msg = fmt::format("{} problems:", problems.size());
  for (size_t i = 0; i < problems.size() && i < kShown; ++i)
    msg += fmt::format("{} ({}) {}", i ? ";" : "", i + 1, brief_text(problems[i], 100));
  if (problems.size() > kShown) msg += fmt::format("; ... {} more", problems.size() - kShown);
  SF_THROW(InvalidArgument, "{}", msg);
}

}  // namespace sf::sfrun
