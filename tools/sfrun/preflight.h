// Preflight: everything that can be checked before a rank starts, all at once, so that a bad
// job is refused with every reason and nothing is left running:
//   * PROGRAM is an executable file (on this host when a rank runs here; on each remote host,
//     through the agent);
//   * each remote host answers through the agent within --probe-timeout (the probe runs a
//     shell there, as the rank wrapper will);
//   * the rendezvous port is free on rank 0's host (bound here; probed with bash's /dev/tcp
//     on a remote host).
//
// Threading: one thread; starts and reaps its own probe processes.
#pragma once

#include <string>

#include "tools/sfrun/options.h"
#include "tools/sfrun/plan.h"

namespace sf::sfrun {

struct Programs {
  std::string local;   // absolute path of PROGRAM here; empty when no rank runs here
  std::string remote;  // PROGRAM for remote hosts: absolute if it names a path, else the bare name
};

// The absolute path of the executable `name` (a path, or looked up in PATH), relative paths
// taken from `cwd`; sf::InvalidArgument saying why not.
std::string resolve_local_program(const std::string& name, const std::string& cwd);

// Runs every check; sf::InvalidArgument listing each problem, one per line.
Programs preflight(const Plan& plan, const Options& o, const std::string& cwd);

}  // namespace sf::sfrun
