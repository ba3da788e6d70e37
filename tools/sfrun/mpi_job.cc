#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
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
#include "tools/sfrun/preflight.h"
#include "tools/sfrun/shell.h"
#include "tools/sfrun/supervisor.h"

namespace sf::sfrun {

namespace {

std::vector<std::string> mpirun_argv(const Options& o, const Plan& plan, const std::string& mpirun,
                                     const std::string& self, const std::string& program, const std::string& log_dir,
                                     const std::string& job_id) {
  std::vector<std::string> argv = {mpirun, "-np", std::to_string(o.n)};
  if (!o.hostfile.empty()) {
    std::string hosts;
    for (const auto& h : plan.hosts) hosts += fmt::format("{}{}:{}", hosts.empty() ? "" : ",", h.host, h.ranks.size());
    argv.insert(argv.end(), {"--host", hosts});
  }
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
  if (o.agent != Options{}.agent) argv.insert(argv.end(), {"--mca", "plm_rsh_agent", o.agent});
  argv.insert(argv.end(), {"-x", "SF_BACKEND=mpi"});
  if (!o.mpirun_args.empty())
    for (auto& w : split_words(o.mpirun_args)) argv.push_back(w);
  argv.insert(argv.end(), {self, "--mpi-rank", "-n", std::to_string(o.n), "--log-dir", log_dir, "--job-id", job_id,
                           "--grace", fmt::format("{}", o.grace)});
  if (o.tee) argv.push_back("--tee");
  if (o.timeout) argv.insert(argv.end(), {"--timeout", fmt::format("{}", *o.timeout)});
  argv.insert(argv.end(), {"--", program});
  argv.insert(argv.end(), o.command.begin() + 1, o.command.end());
  return argv;
}

}  // namespace

int run_mpi_job(const Options& o, const std::string& self) {
  const std::string cwd = current_dir();
  const std::string program = resolve_local_program(o.command.front(), cwd);
  std::string mpirun;
  try {
    mpirun = resolve_local_program(o.mpirun, cwd);
  } catch (const InvalidArgument&) {
    SF_THROW(InvalidArgument, "--transport mpi starts the ranks with mpirun, but '{}' is not an executable (--mpirun)",
             o.mpirun);
  }
  const auto hosts = o.hostfile.empty() ? std::vector<HostEntry>{} : read_hostfile(o.hostfile);
  Options slots = o;
  slots.master_addr = "127.0.0.1";  // mpirun has its own wire-up; the plan only checks the slots
  const Plan plan = make_plan(slots, hosts, is_local_host);
  const std::string log_dir = o.log_dir.front() == '/' ? o.log_dir : cwd + "/" + o.log_dir;
  const std::string job_id = o.dry_run ? peek_job_id(o.log_dir, o.job_id) : claim_job_dir(o.log_dir, o.job_id);
  const auto argv = mpirun_argv(o, plan, mpirun, self, program, log_dir, job_id);
  if (o.dry_run) {
    std::string text = fmt::format("sfrun plan: {} ranks over mpi on {} host{}, started by mpirun\n", o.n,
                                   plan.hosts.size(), plan.hosts.size() == 1 ? "" : "s");
    text += fmt::format("logs: {}/{}/rank.R/stdout, stderr\n", o.log_dir, job_id);
    for (const auto& h : plan.hosts)
      text += fmt::format("host {}: ranks {}..{}\n", h.host, h.ranks.front(), h.ranks.back());
    text += fmt::format("command: {}\n", shell_join(argv));
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  ::execv(mpirun.c_str(), args.data());
  SF_THROW(Error, "cannot start {}: {}", mpirun, std::strerror(errno));
}

int run_mpi_rank(const Options& o) {
  const char* rank_var = std::getenv("OMPI_COMM_WORLD_RANK");
  SF_ENFORCE(rank_var, InvalidArgument, "--mpi-rank runs only under mpirun (OMPI_COMM_WORLD_RANK is not set)");
  const int rank = std::atoi(rank_var);
  const std::string job_dir = o.log_dir + "/" + o.job_id;
  std::vector<std::unique_ptr<RankLog>> logs;
  logs.push_back(std::make_unique<RankLog>(rank, fmt::format("{}/rank.{}", job_dir, rank), o.tee, false));
  RankLaunch l;
  l.rank = rank;
  l.spawn.argv = {o.command.front()};
  for (auto& a : program_args(o)) l.spawn.argv.push_back(a);
  l.spawn.env_set = {"SF_BACKEND=mpi"};
  block_job_signals();
  Supervisor supervisor({l}, logs, job_dir, std::chrono::milliseconds(static_cast<int64_t>(o.grace * 1000)));
  const JobResult result = supervisor.run();
  // Stopped by mpirun because another rank failed: that rank's keeper says so.
  if (result.failed_rank >= 0) std::fputs(result.summary.c_str(), stderr);
  return result.exit_code;
}

}  // namespace sf::sfrun
