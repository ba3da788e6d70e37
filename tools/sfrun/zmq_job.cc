#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include "tools/sfrun/hostfile.h"
#include "tools/sfrun/job.h"
#include "tools/sfrun/job_dir.h"
#include "tools/sfrun/launch.h"
#include "tools/sfrun/local_host.h"
#include "tools/sfrun/plan.h"
#include "tools/sfrun/port.h"
#include "tools/sfrun/preflight.h"
#include "tools/sfrun/secret.h"
#include "tools/sfrun/shell.h"
#include "tools/sfrun/supervisor.h"

namespace sf::sfrun {

std::string current_dir() {
  char buf[4096];
  SF_ENFORCE(::getcwd(buf, sizeof(buf)), IoError, "cannot read the current directory: {}", std::strerror(errno));
  return buf;
}

int run_zmq_job(const Options& o) {
  const std::string cwd = current_dir();
  const auto hosts = o.hostfile.empty() ? std::vector<HostEntry>{} : read_hostfile(o.hostfile);
  Plan plan = make_plan(o, hosts, is_local_host);
  for (const auto& w : plan.warnings) std::fprintf(stderr, "sfrun: warning: %s\n", w.c_str());
  plan.master_port = o.master_port ? *o.master_port : pick_free_port(plan.master_local ? plan.master_addr : "0.0.0.0");

  if (o.dry_run) {
    const std::string job_dir = o.log_dir + "/" + peek_job_id(o.log_dir, o.job_id);
    std::string text = format_plan(plan, job_dir, [&](const std::string& h) { return agent_words(o.agent, h); });
    std::vector<std::string> cmd = {o.command.front()};
    for (auto& a : program_args(o)) cmd.push_back(a);
    text += fmt::format("command: {}\n", shell_join(cmd));
    if (!o.elastic.empty())
      text += fmt::format("elastic {}:{}: a rank that fails does not stop the job; every rank gets SF_ELASTIC={}:{}\n",
                          o.elastic_min, o.elastic_max, o.elastic_min, o.elastic_max);
    if (!o.elastic.empty())
      text += o.max_restarts == 0
                  ? std::string("max restarts 0: a member that fails is not replaced\n")
                  : fmt::format("max restarts {}: a member that fails is replaced, at most {} time{} in all; the "
                                "replacement gets SF_ELASTIC_JOIN\n",
                                o.max_restarts, o.max_restarts, o.max_restarts == 1 ? "" : "s");
    std::fputs(text.c_str(), stdout);
    return 0;
  }

  const Programs programs = preflight(plan, o, cwd);
  const std::string secret = make_job_secret();
  const std::string job_id = claim_job_dir(o.log_dir, o.job_id);
  const std::string job_dir = o.log_dir + "/" + job_id;
  std::vector<std::unique_ptr<RankLog>> logs;
  std::vector<RankLaunch> launches;
  for (const auto& slot : plan.ranks) {
    const bool remote = !plan.hosts[slot.host].local;
    logs.push_back(std::make_unique<RankLog>(slot.rank, fmt::format("{}/rank.{}", job_dir, slot.rank), o.tee, remote));
    launches.push_back(make_rank_launch(plan, slot.rank, o, remote ? programs.remote : programs.local, job_id, secret,
                                        cwd));
  }
  block_job_signals();
  Supervisor supervisor(std::move(launches), logs, job_dir,
                        std::chrono::milliseconds(static_cast<int64_t>(o.grace * 1000)), !o.elastic.empty(),
                        o.max_restarts);
  const JobResult result = supervisor.run();
  std::fputs(result.summary.c_str(), stderr);
  return result.exit_code;
}

}  // namespace sf::sfrun
