#include "tools/sfrun/launch.h"

#include <fmt/format.h>

#include "tools/sfrun/remote.h"
#include "tools/sfrun/shell.h"

namespace sf::sfrun {

std::vector<std::string> program_args(const Options& o) {
  std::vector<std::string> args(o.command.begin() + 1, o.command.end());
  if (o.timeout) {
    args.push_back("--comm-timeout");
    args.push_back(fmt::format("{}", *o.timeout));
  }
  return args;
}

RankLaunch make_rank_launch(const Plan& plan, int rank, const Options& o, const std::string& program,
                            const std::string& job_id, const std::string& secret, const std::string& cwd) {
  const RankSlot& slot = plan.ranks.at(rank);
  const HostPlan& host = plan.hosts.at(slot.host);
  std::vector<std::string> env = {
      fmt::format("SF_RANK={}", rank),
      fmt::format("SF_WORLD_SIZE={}", plan.size),
      fmt::format("SF_LOCAL_RANK={}", slot.local_rank),
      fmt::format("SF_LOCAL_WORLD_SIZE={}", slot.local_size),
      fmt::format("SF_RENDEZVOUS={}", plan.rendezvous()),
      "SF_BACKEND=zmq",
      fmt::format("SF_JOB_ID={}", job_id),
  };
  if (!o.elastic.empty()) env.push_back(fmt::format("SF_ELASTIC={}:{}", o.elastic_min, o.elastic_max));
  std::vector<std::string> command = {program};
  for (auto& a : program_args(o)) command.push_back(a);

  RankLaunch l;
  l.rank = rank;
  l.remote = !host.local;
  l.env = env;
  l.command = command;
  if (host.local) {
    l.spawn.argv = command;
    l.spawn.env_set = env;
    l.spawn.env_set.push_back("SF_JOB_SECRET=" + secret);
  } else {
    l.agent = o.agent;
    l.host = host.host;
    l.cwd = cwd;
    l.spawn.argv = agent_argv(o.agent, host.host, remote_rank_line(env, command, cwd));
    l.spawn.stdin_pipe = true;
    l.stdin_first_line = secret + "\n";
  }
  return l;
}

RankLaunch with_extra_env(const RankLaunch& launch, const std::vector<std::string>& extra) {
  RankLaunch l = launch;
  l.env.insert(l.env.end(), extra.begin(), extra.end());
  if (l.remote) l.spawn.argv = agent_argv(l.agent, l.host, remote_rank_line(l.env, l.command, l.cwd));
  else l.spawn.env_set.insert(l.spawn.env_set.end(), extra.begin(), extra.end());
  return l;
}

}  // namespace sf::sfrun
