// Plan: which host runs which rank, and where the rendezvous is — decided before anything
// starts, printed by --dry-run. Hosts are filled in hostfile order, each up to its slots (and
// --nproc-per-node), ranks numbered consecutively, so ranks of one host are neighbours (local
// rank = index on the host). Without a hostfile every rank runs here.
//
// Threading: pure functions.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tools/sfrun/hostfile.h"
#include "tools/sfrun/options.h"

namespace sf::sfrun {

struct HostPlan {
  std::string host;        // as the agent reaches it ("localhost" without a hostfile)
  std::string addr;        // as other hosts reach it (hostfile addr=, else the host name)
  bool local = false;      // this machine: ranks are started directly, not through the agent
  std::vector<int> ranks;  // its ranks, ascending
};

struct RankSlot {
  int rank = 0;
  int host = 0;        // index into Plan::hosts
  int local_rank = 0;  // index among its host's ranks
  int local_size = 0;  // ranks on its host
};

struct Plan {
  int size = 0;
  std::string transport;
  std::vector<HostPlan> hosts;  // only hosts that got ranks
  std::vector<RankSlot> ranks;  // by rank
  std::string master_addr;      // IPv4 address rank 0 binds for the rendezvous
  int master_port = 0;          // 0 until chosen (port.h)
  bool master_local = true;     // rank 0 runs on this machine
  std::vector<std::string> warnings;  // doubtful but possibly right, printed before the start

  bool all_local() const;
  std::string rendezvous() const;  // tcp://master_addr:master_port
};

using IsLocalHost = std::function<bool(const std::string&)>;

// Lays out o.n ranks on `hosts` (empty: this machine only). sf::InvalidArgument when the slots
// do not suffice or the rendezvous address cannot serve every host.
Plan make_plan(const Options& o, const std::vector<HostEntry>& hosts, const IsLocalHost& is_local);

// The plan as --dry-run prints it; `agent_words(host)` shows how a remote host is reached.
std::string format_plan(const Plan& plan, const std::string& job_dir,
                        const std::function<std::string(const std::string&)>& agent_words);

}  // namespace sf::sfrun
