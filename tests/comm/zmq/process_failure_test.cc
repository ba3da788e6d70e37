// Multi-process failure of the zmq transport: three zmq_failure_rank processes meet through
// the rendezvous (SF_RANK, SF_WORLD_SIZE, SF_RENDEZVOUS, SF_JOB_SECRET) and loop 1 MiB
// AllReduces over tcp://127.0.0.1; the driver then SIGKILLs rank 1 in the middle of one — or
// SIGSTOPs it, which keeps its TCP connections open, so only heartbeats and the collectives'
// deadline can tell — and every other rank must report PeerLost within the per-operation
// timeout plus the notice grace (comm/detail/call.h), naming rank 1.
//
// One exception is checked for what it is: a rank that had already finished AllReduce k, and
// waits in k+1 for a rank that failed in k (it lost rank 1 there), names that rank — the
// collectives' blame follows notices of one sequence number only (comm/detail/call.cc). The
// driver then requires the rank it names to have named rank 1 itself, at an earlier sequence
// number. The driver kills every child it started on any way out, and gives up on its own
// after kJobDeadline.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kRanks = 3;
constexpr int kVictim = 1;
constexpr auto kTimeout = 2000ms;    // the collectives' per-operation timeout
constexpr auto kHeartbeat = 200ms;   // heartbeat timeout is 5 intervals
constexpr auto kGrace = kTimeout / 2;  // comm/detail/call.h: notice_grace(timeout)
constexpr auto kSlack = 1500ms;        // process scheduling on a loaded 2-core machine
constexpr auto kJobDeadline = 40s;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The children of one test; the destructor kills and reaps whatever is still running.
class Job {
 public:
  Job() {
    char tmpl[] = "/tmp/sf-zmq-failure-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~Job() {
    for (pid_t p : pids_)
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    std::filesystem::remove_all(dir_);
  }

  void start() {
    const std::string secret = "failure-test-" + std::to_string(::getpid());
    for (int r = 0; r < kRanks; ++r) {
      std::vector<std::string> env;
      for (char** e = environ; *e; ++e) env.emplace_back(*e);
      env.push_back("SF_RANK=" + std::to_string(r));
      env.push_back("SF_WORLD_SIZE=" + std::to_string(kRanks));
      env.push_back("SF_RENDEZVOUS=ipc://" + dir_ + "/rendezvous");
      env.push_back("SF_JOB_SECRET=" + secret);
      std::vector<char*> envp;
      for (auto& s : env) envp.push_back(s.data());
      envp.push_back(nullptr);
      const std::string out = output_path(r);
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_adddup2(&fa, 1, 2);
      std::string prog = SF_ZMQ_FAILURE_RANK, timeout = std::to_string(kTimeout.count()),
                  heartbeat = std::to_string(kHeartbeat.count());
      char* argv[] = {prog.data(), timeout.data(), heartbeat.data(), nullptr};
      pid_t pid = -1;
      const int rc = posix_spawn(&pid, prog.c_str(), &fa, nullptr, argv, envp.data());
      posix_spawn_file_actions_destroy(&fa);
      ASSERT_EQ(rc, 0) << "posix_spawn " << prog;
      pids_.push_back(pid);
    }
  }

  std::string output_path(int r) const { return dir_ + "/rank" + std::to_string(r) + ".out"; }
  std::string output(int r) const { return slurp(output_path(r)); }
  pid_t pid(int r) const { return pids_[r]; }

  // Waits until every rank has printed `line`; false at the deadline.
  bool wait_all_print(const std::string& line, Clock::time_point deadline) const {
    for (;;) {
      bool all = true;
      for (int r = 0; r < kRanks; ++r) all = all && output(r).find(line) != std::string::npos;
      if (all) return true;
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(20ms);
    }
  }

 private:
  std::string dir_;
  std::vector<pid_t> pids_;
};

std::string all_outputs(const Job& job) {
  std::string s;
  for (int r = 0; r < kRanks; ++r) s += "--- rank " + std::to_string(r) + ":\n" + job.output(r);
  return s;
}

void expect_victim_named(int sig) {
  Job job;
  ASSERT_NO_FATAL_FAILURE(job.start());
  const auto job_end = Clock::now() + kJobDeadline;
  ASSERT_TRUE(job.wait_all_print("looping", job_end)) << "the world never formed:\n" << all_outputs(job);
  std::this_thread::sleep_for(300ms);  // well inside the AllReduce loop
  const auto killed_at = Clock::now();
  ASSERT_EQ(::kill(job.pid(kVictim), sig), 0);
  const auto bound = kTimeout + kGrace + kSlack;
  struct Report {
    long long named = -1, seq = -1;
  };
  std::vector<Report> reports(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    std::string out;
    while ((out = job.output(r)).find('\n', out.find("PEERLOST")) == std::string::npos &&
           Clock::now() < std::min(killed_at + bound + 1s, job_end))
      std::this_thread::sleep_for(5ms);
    const size_t at = out.find("PEERLOST rank=");
    ASSERT_NE(at, std::string::npos) << "rank " << r << " reported nothing "
                                     << std::chrono::duration_cast<std::chrono::milliseconds>(bound + 1s).count()
                                     << " ms after the signal:\n" << all_outputs(job);
    long long at_ns = 0;
    ASSERT_EQ(std::sscanf(out.c_str() + at, "PEERLOST rank=%lld at_ns=%lld", &reports[r].named, &at_ns), 2) << out;
    const size_t seq_at = out.find(", seq ", at);
    ASSERT_NE(seq_at, std::string::npos) << out;
    reports[r].seq = std::atoll(out.c_str() + seq_at + 6);
    const auto took = std::chrono::nanoseconds(at_ns) - killed_at.time_since_epoch();
    const long long took_ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
    EXPECT_LE(took, bound) << "rank " << r << " reported after " << took_ms << " ms:\n" << out;
    std::printf("rank %d: PeerLost naming rank %lld %lld ms after the signal: %s", r, reports[r].named, took_ms,
                out.substr(out.find("what=", at) + 5).c_str());
  }
  bool direct = false;
  for (int r = 0; r < kRanks; ++r) {
    if (r == kVictim) continue;
    const Report& me = reports[r];
    direct = direct || me.named == kVictim;
    if (me.named == kVictim) continue;
    // The exception above: the named rank failed one collective earlier, naming the victim.
    ASSERT_TRUE(me.named >= 0 && me.named < kRanks && me.named != r) << all_outputs(job);
    const Report& blamed = reports[me.named];
    EXPECT_TRUE(blamed.named == kVictim && blamed.seq < me.seq)
        << "rank " << r << " named rank " << me.named << " at seq " << me.seq << ", which did not name rank "
        << kVictim << " earlier:\n" << all_outputs(job);
  }
  EXPECT_TRUE(direct) << "no rank named rank " << kVictim << ":\n" << all_outputs(job);
}

TEST(ZmqProcessFailure, EveryRankNamesARankKilledMidAllReduce) { expect_victim_named(SIGKILL); }

TEST(ZmqProcessFailure, EveryRankNamesARankFrozenMidAllReduce) { expect_victim_named(SIGSTOP); }

}  // namespace
