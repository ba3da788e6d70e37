// How each rank of a zmq job is started: its environment (the variables comm/bootstrap/
// job_spec.h reads) and its command — the program itself for a rank on this host, the agent
// running the rank wrapper (remote.h) for a rank on another host.
//
//   SF_RANK, SF_WORLD_SIZE, SF_LOCAL_RANK, SF_LOCAL_WORLD_SIZE, SF_RENDEZVOUS, SF_BACKEND=zmq,
//   SF_JOB_ID, SF_ELASTIC=MIN:MAX with --elastic, and SF_JOB_SECRET — the last in the
//   environment of a local rank, on the wrapper's stdin for a remote one. An elastic job's
//   replacement rank also gets SF_ELASTIC_JOIN=ADDRESS (with_extra_env, supervisor.h).
// --timeout S becomes `--comm-timeout S` after the program's arguments (init() takes it out).
//
// Threading: pure functions.
#pragma once

#include <string>
#include <vector>

#include "tools/sfrun/options.h"
#include "tools/sfrun/plan.h"
#include "tools/sfrun/process.h"

namespace sf::sfrun {

struct RankLaunch {
  int rank = 0;
  bool remote = false;
  SpawnSpec spawn;
  std::string stdin_first_line;  // remote: the secret, written before anything else
  // What `spawn` was made of, so that the same launch can be made again with more variables
  // (with_extra_env): the rank's variables (never the secret), the program and its arguments,
  // and for a remote rank the agent, its host and the directory to run in.
  std::vector<std::string> env;
  std::vector<std::string> command;
  std::string agent, host, cwd;
};

// `program` is what runs: an absolute path, or a bare name looked up on the remote host.
RankLaunch make_rank_launch(const Plan& plan, int rank, const Options& o, const std::string& program,
                            const std::string& job_id, const std::string& secret, const std::string& cwd);

// The same launch with `extra` NAME=VALUE variables too: in the environment of a local rank, on
// the wrapper's `env` command line for a remote one (an elastic replacement's SF_ELASTIC_JOIN).
RankLaunch with_extra_env(const RankLaunch& launch, const std::vector<std::string>& extra);

// The program's arguments as the ranks get them (o.command minus PROGRAM, plus --comm-timeout).
std::vector<std::string> program_args(const Options& o);

}  // namespace sf::sfrun
