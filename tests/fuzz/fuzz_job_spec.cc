// Fuzz target: how a process decides its job (comm/bootstrap/job_spec.h) from its command line
// and environment, and the zmq join the launcher's environment describes
// (zmq_join_from_env, comm/zmq/transport.h).
//
// Input: lines; a line NAME=VALUE sets an environment variable, any other line is a
// command-line argument. consume_comm_args takes the comm layer's arguments out of the argv,
// resolve_job decides from them and the variables (given through an EnvReader), and
// zmq_join_from_env reads the same variables from the real environment. Refusals are
// sf::InvalidArgument.
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <shardflow/comm/bootstrap/job_spec.h>
#include <shardflow/comm/zmq/transport.h>
#include <shardflow/core/error.h>
#include "fuzz_input.h"

namespace {

// The variables zmq_join_from_env reads; set from the input, unset after each run.
const char* const kJoinVars[] = {"SF_RANK", "SF_WORLD_SIZE", "SF_RENDEZVOUS", "SF_JOB_SECRET"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::string> env;
  std::vector<std::string> args{"program"};
  for (const std::string& line : sf::fuzz::split(data, size, '\n')) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos && eq > 0 && line.rfind("--", 0) != 0 && line.find('\0') == std::string::npos)
      env[line.substr(0, eq)] = line.substr(eq + 1);
    else
      args.push_back(line);
  }

  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  const sf::comm::EnvReader reader = [&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  try {
    const std::vector<std::string> comm_args = sf::comm::consume_comm_args(argc, argv.data());
    SF_FUZZ_CHECK(argc >= 1 && argc <= static_cast<int>(args.size()) && argv[argc] == nullptr);
    const sf::comm::JobSpec s = sf::comm::resolve_job(comm_args, reader);
    SF_FUZZ_CHECK(s.size >= 1 && s.rank >= 0 && s.rank < s.size && s.local_ranks >= 1);
    SF_FUZZ_CHECK(!s.timeout || s.timeout->count() >= 0);
  } catch (const sf::Error&) {
  }

  for (const char* name : kJoinVars) {
    auto it = env.find(name);
    if (it != env.end()) ::setenv(name, it->second.c_str(), 1);
  }
  try {
    const sf::comm::ZmqJoin j = sf::comm::zmq_join_from_env();
    SF_FUZZ_CHECK(!j.rendezvous.empty() && !j.options.secret.empty());
  } catch (const sf::Error&) {
  }
  for (const char* name : kJoinVars) ::unsetenv(name);
  return 0;
}
