// Supervisor: runs the ranks of a job to the end and fails the whole job fast.
//
//   * Starts every rank (process.h), writes a remote rank's secret line to its agent's stdin,
//     and streams each rank's stdout/stderr into its RankLog.
//   * The first rank that exits non-zero or dies of a signal fails the job: every other rank
//     gets SIGTERM (a remote one: a TERM line to its wrapper), and whatever still runs `grace`
//     later gets SIGKILL (its whole process group; a remote wrapper's stdin is closed, which
//     kills its program). The summary names that rank: `sfrun: rank 3 exited with signal 9
//     (Killed) — see log_output/1/rank.3/stdout`, then its last stderr line and the first comm
//     timeout report of any rank.
//   * SIGINT/SIGTERM/SIGHUP to sfrun are forwarded to every rank (a remote one gets TERM), with
//     the same SIGKILL after `grace`; a second one kills at once.
//   * Returns once every rank is reaped and its output drained. sfrun is the subreaper of the
//     ranks' process trees, so what a rank leaves behind is reaped too.
//
// An elastic job (`elastic`, sfrun --elastic) differs in what a failed rank does: nothing
// stops. The ranks left agree among themselves on the new membership and print it
// (elastic_lines.h); the supervisor follows it (elastic_membership.h):
//   * a rank that exits non-zero or dies of a signal while other members run is said in one
//     line, `sfrun: rank 2 exited with signal 9 (Killed); the elastic job goes on without it`;
//   * the first line of each generation is passed on to sfrun's stderr, `sfrun: shardflow
//     elastic: generation 1: ...`;
//   * once every member has exited, a removed rank still alive (a frozen rank the others gave
//     up on) gets SIGKILL, its whole group: `sfrun: rank 2 was removed from the job; stopped it`;
//   * the job fails with the first member of the last membership that failed; what happened to
//     removed ranks fails nothing.
// SIGINT/SIGTERM/SIGHUP stop an elastic job as any other.
//
// With `max_restarts` K > 0 (sfrun --max-restarts) a member that fails is replaced, at most K
// times in all:
//   * its failure line ends `; a replacement will join (restart I of K)`, and what it left in
//     its process group is killed;
//   * once a rank has printed a join line (elastic_lines.h) of a generation newer than the
//     membership the rank was lost from (and not older than the current one), sfrun starts the
//     same launch again with SF_ELASTIC_JOIN=ADDRESS, in the same slot: same rank number, same
//     logs (appended); `sfrun: starting a replacement for rank 2 (restart 1 of 3); it joins
//     generation 1`;
//   * the replacement has joined once a membership line of a later generation lists its rank;
//     until then it is no member: its end fails nothing (`sfrun: the replacement for rank 2
//     exited with code 1 before it joined`, and with restarts left another one follows a newer
//     door), it does not keep the job going (once every member has ended it is killed like a
//     removed rank), and the failure of the member it replaces still counts where no line
//     removed that rank;
//   * a replacement that has not joined while a join line of a newer generation names another
//     address than its door (door_is_gone: the rank 0 it waits at is rank 0 no longer, in
//     practice dead) is moved: its process group gets SIGKILL and, once reaped, it is started
//     again at the newer door by the same restart, which is not spent again: `sfrun: the
//     replacement for rank 2 waited at the door of generation 1, whose rank 0 is gone; starting
//     it again at generation 2 (ADDRESS)`;
//   * none is started once sfrun is stopping or every member has ended; the summary says how
//     many restarts were used.
//
// The caller blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP (block_job_signals) before anything is
// started, so no signal is lost between the start and the loop; the supervisor reads them from
// a signalfd.
//
// Threading: one thread. Owns the children's descriptors; the RankLogs are the caller's.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/sfrun/elastic_membership.h"
#include "tools/sfrun/launch.h"
#include "tools/sfrun/rank_log.h"

namespace sf::sfrun {

// Blocks the signals the supervisor reads (also SIGPIPE, ignored: a closed pipe is an error
// return, not a death).
void block_job_signals();

struct JobResult {
  int exit_code = 0;        // 0; the first failed rank's code (128+N for signal N); 128+N when interrupted
  int failed_rank = -1;     // -1 when none failed
  std::string summary;      // the lines sfrun prints last
  std::chrono::milliseconds stop_time{0};  // from the first failure (or signal) to the last rank reaped
};

class Supervisor {
 public:
  // `logs[i]` receives the output of launches[i]; `job_dir` is how the summary names the logs
  // (job_dir/rank.R/stdout). `elastic`: the launches are ranks 0..N-1 of an elastic job, which
  // may start `max_restarts` replacement ranks in all.
  Supervisor(std::vector<RankLaunch> launches, std::vector<std::unique_ptr<RankLog>>& logs, std::string job_dir,
             std::chrono::milliseconds grace, bool elastic = false, int max_restarts = 0);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  JobResult run();

 private:
  struct Rank;
  using Clock = std::chrono::steady_clock;

  void start_all();
  void start_rank(Rank& r, const RankLaunch& l);
  void reap();
  void on_elastic_failure(Rank& r);
  bool members_running() const;
  int promise_restart(Rank& r, int door_from);
  void note_joins();
  void move_from_dead_doors();
  void start_replacements();
  void start_replacement(Rank& r, const JoinLine& door);
  void stop_removed_ranks();
  std::string describe_end(int status, bool remote) const;
  bool pump(Rank& r, bool is_err);
  void on_signal(int signo);
  void stop(int signo);
  void signal_rank(Rank& r, int signo);
  void kill_all();
  bool all_reaped() const;
  JobResult finish();

  std::vector<RankLaunch> launches_;
  std::vector<std::unique_ptr<RankLog>>& logs_;
  std::string job_dir_;
  std::chrono::milliseconds grace_;
  std::vector<Rank> ranks_;
  int signal_fd_ = -1;
  bool stopping_ = false;
  bool killed_ = false;
  int interrupted_by_ = 0;
  int first_failure_ = -1;
  std::string start_error_;
  std::vector<int> stopped_;  // ranks still running when the stop began
  std::optional<ElasticMembership> elastic_;  // an elastic job's membership; empty otherwise
  int max_restarts_ = 0;                      // elastic: replacements allowed in all
  int restarts_promised_ = 0;                 // restart numbers given to failures
  int restarts_started_ = 0;                  // replacements started
  bool members_ended_ = false;                // elastic: every member has ended; nothing more starts
  Clock::time_point started_{}, stop_started_{}, kill_at_{}, drain_until_{};
};

}  // namespace sf::sfrun
