#include <shardflow/comm/bootstrap/init.h>

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <shardflow/comm/bootstrap/open_transport.h>
#include <shardflow/comm/debug.h>
#include <shardflow/comm/options.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>

namespace sf::comm {

namespace {

struct Job {
  JobSpec spec;
  std::vector<std::shared_ptr<RankContext>> ranks;  // this process's, in rank order
};

std::mutex g_mu;
std::unique_ptr<Job> g_job;

}  // namespace

void init(int& argc, char** argv) {
  const std::vector<std::string> args = consume_comm_args(argc, argv);
  init(resolve_job(args, process_env()));
}

void init(const JobSpec& spec) {
  std::lock_guard<std::mutex> lock(g_mu);
  SF_ENFORCE(!g_job, InvalidArgument, "init(): this process already started a job ({}, {} ranks); call release() first",
             source_name(g_job->spec.source), g_job->spec.size);
  if (spec.timeout) set_default_timeout(*spec.timeout);
  if (spec.debug) set_debug_checks(true);
  auto job = std::make_unique<Job>();
  job->spec = spec;
  const auto transports = open_transports(spec);
  for (size_t i = 0; i < transports.size(); ++i) {
    const int local = spec.local_ranks > 1 ? static_cast<int>(i) : spec.local_rank;
    job->ranks.push_back(std::make_shared<RankContext>(transports[i], local));
  }
  set_process_rank(job->ranks.size() == 1 ? job->ranks.front() : nullptr);
  g_job = std::move(job);
}

bool initialized() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_job != nullptr;
}

const JobSpec& job() {
  std::lock_guard<std::mutex> lock(g_mu);
  SF_ENFORCE(g_job, InvalidArgument, "comm: no job: call sf::comm::init() first");
  return g_job->spec;
}

void run_ranks(const std::function<void()>& fn) {
  std::vector<std::shared_ptr<RankContext>> ranks;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    SF_ENFORCE(g_job, InvalidArgument, "run_ranks(): call sf::comm::init() first");
    ranks = g_job->ranks;
  }
  if (ranks.size() == 1) {
    // The process's rank: after a membership change (replace_world) no longer the one init made.
    std::shared_ptr<RankContext> one = process_rank();
    RankBinding bind(one ? one : ranks.front());
    fn();
    return;
  }
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::thread> threads;
  for (const auto& ctx : ranks) {
    threads.emplace_back([&, ctx] {
      try {
        RankBinding bind(ctx);
        fn();
      } catch (...) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (!first) first = std::current_exception();
        }
        // A rank that stops early would leave its peers waiting out their timeout. Closed
        // after recording, so the root cause stays the first error.
        ctx->transport()->close();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

void release() {
  std::unique_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    job = std::move(g_job);
  }
  std::shared_ptr<RankContext> one = process_rank();  // a membership change's world, if any
  set_process_rank(nullptr);
  if (!job) return;
  if (one && job->ranks.size() == 1 && one != job->ranks.front()) job->ranks.push_back(one);
  for (const auto& ctx : job->ranks) ctx->transport()->close();
  // Then ends them for good: a Python program's Model or reducer may still hold a transport
  // when the interpreter exits, and MPI must be finalized before the process ends.
  for (const auto& ctx : job->ranks) ctx->transport()->finish();
}

}  // namespace sf::comm
