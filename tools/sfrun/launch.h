// How each rank of a zmq job is started: its environment (the variables comm/bootstrap/
// job_spec.h reads) and its command — the program itself for a rank on this host, the agent
// running the rank wrapper (remote.h) for a rank on another host.
//
//   SF_RANK, SF_WORLD_SIZE, SF_LOCAL_RANK, SF_LOCAL_WORLD_SIZE, SF_RENDEZVOUS, SF_BACKEND=zmq,
//   SF_JOB_ID, SF_ELASTIC=MIN:MAX with --elastic, and SF_JOB_SECRET — the last in the
//   environment of a local rank, on the wrapper's stdin for a remote one.
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
};

// `program` is what runs: an absolute path, or a bare name looked up on the remote host.
RankLaunch make_rank_launch(const Plan& plan, int rank, const Options& o, const std::string& program,
                            const std::string& job_id, const std::string& secret, const std::string& cwd);

// The program's arguments as the ranks get them (o.command minus PROGRAM, plus --comm-timeout).
std::vector<std::string> program_args(const Options& o);

}  // namespace sf::sfrun
