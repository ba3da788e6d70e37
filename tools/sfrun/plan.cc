#include "tools/sfrun/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include "tools/sfrun/local_host.h"

namespace sf::sfrun {

bool Plan::all_local() const {
  return std::all_of(hosts.begin(), hosts.end(), [](const HostPlan& h) { return h.local; });
}

std::string Plan::rendezvous() const { return fmt::format("tcp://{}:{}", master_addr, master_port); }

namespace {

// "a 2, b 4": the first hosts of a hostfile of up to 65536 and how many more.
std::string slots_list(const std::vector<HostEntry>& hosts) {
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < hosts.size() && i < kShown; ++i)
    out += fmt::format("{}{} {}", i ? ", " : "", brief_text(hosts[i].host, 40), hosts[i].slots);
  if (hosts.size() > kShown) out += fmt::format(", ... {} more hosts", hosts.size() - kShown);
  return out;
}

}  // namespace

Plan make_plan(const Options& o, const std::vector<HostEntry>& entries, const IsLocalHost& is_local) {
  const int cap = o.nproc_per_node.value_or(INT_MAX);
  std::vector<HostEntry> hosts = entries;
  if (hosts.empty()) {
    SF_ENFORCE(o.n <= cap, InvalidArgument,
               "-n {} with --nproc-per-node {} needs {} hosts, but without --hostfile every rank runs on this host",
               o.n, cap, (o.n + cap - 1) / cap);
    hosts.push_back({.host = "localhost", .slots = o.n, .addr = "127.0.0.1", .line = 0});
  }
  Plan p;
  p.size = o.n;
  p.transport = o.transport;
  int next = 0;
  for (const auto& e : hosts) {
    const int take = std::min({e.slots, cap, o.n - next});
    if (take <= 0) continue;
    HostPlan h{.host = e.host, .addr = e.addr.empty() ? e.host : e.addr, .local = is_local(e.host), .ranks = {}};
    for (int i = 0; i < take; ++i) {
      h.ranks.push_back(next);
      p.ranks.push_back({.rank = next, .host = static_cast<int>(p.hosts.size()), .local_rank = i, .local_size = take});
      ++next;
    }
    p.hosts.push_back(h);
  }
  if (next < o.n) {
    int offered = 0;
    for (const auto& e : hosts) offered += std::min(e.slots, cap);
    SF_THROW(InvalidArgument, "-n {} needs {} slots, but {} offers only {} ({}{})", o.n, o.n, brief_text(o.hostfile, 160), offered,
             slots_list(hosts), o.nproc_per_node ? fmt::format("; at most {} per host", cap) : "");
  }
  const HostPlan& first = p.hosts.front();
  p.master_local = first.local;
  std::string addr = o.master_addr;
  if (addr.empty()) addr = first.local && p.all_local() && entries.empty() ? "127.0.0.1" : first.addr;
  if (addr == "localhost") addr = "127.0.0.1";
  p.master_addr = resolve_ipv4(addr, "the rendezvous address (rank 0's host)");
  // Right only when the "other hosts" share this machine's network (an agent that is not a
  // real remote login), so it is said, not refused.
  if (!p.all_local() && is_loopback_ipv4(p.master_addr))
    p.warnings.push_back(fmt::format(
        "the rendezvous address {} of host '{}' is a loopback address, but ranks run on other hosts, which cannot "
        "reach it: give rank 0's host an addr= in the hostfile or pass --master-addr",
        p.master_addr, first.host));
  return p;
}

std::string format_plan(const Plan& p, const std::string& job_dir,
                        const std::function<std::string(const std::string&)>& agent_words) {
  std::string out = fmt::format("sfrun plan: {} ranks over {} on {} host{}; rendezvous {} (rank 0 binds it)\n",
                                p.size, p.transport, p.hosts.size(), p.hosts.size() == 1 ? "" : "s", p.rendezvous());
  out += fmt::format("logs: {}/rank.R/stdout, stderr\n", job_dir);
  for (const auto& h : p.hosts) {
    out += fmt::format("host {} (addr {}): ranks {}..{}, {}\n", h.host, h.addr, h.ranks.front(), h.ranks.back(),
                       h.local ? "started here" : "started through `" + agent_words(h.host) + "`");
  }
  for (const auto& r : p.ranks) {
    const auto& h = p.hosts[r.host];
    out += fmt::format("rank {} -> host {} local rank {} of {}{}\n", r.rank, h.host, r.local_rank, r.local_size,
                       r.rank == 0 ? fmt::format(", binds {}:{}", p.master_addr, p.master_port) : "");
  }
  return out;
}

}  // namespace sf::sfrun
