// The shell command lines sfrun hands the agent for a remote host (the agent contract is in
// shell.h): the rank wrapper and the preflight probe. Both run under `sh` whatever the
// remote login shell is.
//
// The rank wrapper, on the remote host:
//   1. reads the job secret from its stdin (the first line sfrun writes) into SF_JOB_SECRET,
//      so the secret never appears on a command line;
//   2. starts `env VARS... PROGRAM ARGS...` in the background, stdin /dev/null, after printing
//      `@sfrun-pid PID` as the first line of stdout (sfrun writes it to rank.R/pid);
//   3. forwards each further line of its stdin (TERM, KILL) as a signal to the program, and
//      kills it with SIGKILL when its stdin closes — sfrun stopped the rank, or sfrun or the
//      connection died, so no rank outlives its launcher;
//   4. exits with the program's status (128+N when it died of signal N).
//
// Threading: pure functions.
#pragma once

#include <string>
#include <vector>

namespace sf::sfrun {

// First stdout line of a remote rank: kPidMarker + " " + pid.
inline constexpr const char* kPidMarker = "@sfrun-pid";
// Exit status of the wrapper when its stdin carried no secret.
inline constexpr int kNoSecretStatus = 126;

// `env_set` are NAME=VALUE pairs (never the secret), `command` the program and its arguments,
// `cwd` the directory to run in where it exists on the remote host.
std::string remote_rank_line(const std::vector<std::string>& env_set, const std::vector<std::string>& command,
                             const std::string& cwd);

// Prints `@sfrun-probe ok`, or `@sfrun-probe missing-program` when `program` is not an
// executable there, or `@sfrun-probe port-in-use` when `port` > 0 and something listens on
// addr:port there (checked with bash's /dev/tcp where bash exists).
std::string remote_probe_line(const std::string& program, const std::string& cwd, const std::string& addr, int port);

}  // namespace sf::sfrun
