#include "tools/sfrun/remote.h"

#include <fmt/format.h>

#include "tools/sfrun/shell.h"

namespace sf::sfrun {

namespace {

// A line that any login shell (sh, bash, zsh, csh, fish) hands to sh unchanged.
std::string under_sh(const std::string& script) { return "exec sh -c " + shell_quote(script); }

}  // namespace

std::string remote_rank_line(const std::vector<std::string>& env_set, const std::vector<std::string>& command,
                             const std::string& cwd) {
  std::vector<std::string> start = {"sh", "-c", std::string("echo \"") + kPidMarker + " $$\"; exec \"$@\"",
                                    "sfrun-rank", "env"};
  start.insert(start.end(), env_set.begin(), env_set.end());
  start.insert(start.end(), command.begin(), command.end());
  const std::string script = fmt::format(
      "IFS= read -r SF_JOB_SECRET || exit {no_secret}\n"
      "export SF_JOB_SECRET\n"
      "cd {cwd} 2>/dev/null\n"
      "exec 3<&0\n"
      "{start} </dev/null 3<&- &\n"
      "p=$!\n"
      "(while IFS= read -r s <&3; do kill -s \"$s\" \"$p\" 2>/dev/null; done; kill -s KILL \"$p\" 2>/dev/null) &\n"
      "w=$!\n"
      "exec 3<&-\n"
      "wait \"$p\"; s=$?\n"
      "kill \"$w\" 2>/dev/null\n"
      "exit \"$s\"\n",
      fmt::arg("no_secret", kNoSecretStatus), fmt::arg("cwd", shell_quote(cwd)), fmt::arg("start", shell_join(start)));
  return under_sh(script);
}

std::string remote_probe_line(const std::string& program, const std::string& cwd, const std::string& addr, int port) {
  const std::string p = shell_quote(program);
  std::string script = fmt::format("cd {} 2>/dev/null\n", shell_quote(cwd));
  if (program.find('/') != std::string::npos)
    script += fmt::format("if [ ! -f {0} ] || [ ! -x {0} ]; then echo '@sfrun-probe missing-program'; exit 0; fi\n", p);
  else
    script += fmt::format("if ! command -v {} >/dev/null 2>&1; then echo '@sfrun-probe missing-program'; exit 0; fi\n", p);
  if (port > 0)
    script += fmt::format(
        "if command -v bash >/dev/null 2>&1 && bash -c {} 2>/dev/null; then echo '@sfrun-probe port-in-use'; "
        "exit 0; fi\n",
        shell_quote(fmt::format("exec 3<>/dev/tcp/{}/{}", addr, port)));
  script += "echo '@sfrun-probe ok'\n";
  return under_sh(script);
}

}  // namespace sf::sfrun
