#include "tools/sfrun/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include "tools/sfrun/process.h"

namespace sf::sfrun {

struct Supervisor::Rank {
  int rank = 0;
  size_t index = 0;  // into launches_ and logs_
  bool remote = false;
  pid_t pid = -1;
  int out = -1, err = -1, ctl = -1;
  bool running = false;
  int status = 0;
  Clock::time_point ended_at{};
  bool removed = false;  // elastic: sfrun killed it, outside the membership, once every member had ended
  // Elastic restarts (--max-restarts). The process in the slot is the first one, or a replacement given the door of
  // `join_generation`; it has `joined` once a membership line of a later generation lists the rank (the first one
  // always has).
  int join_generation = -1;
  bool joined = true;
  // Where the process in the slot is a replacement that has not joined: how the last one in the slot that was a
  // member ended. That end, not the replacement's, is what counts for the job's status.
  int member_status = 0;
  Clock::time_point member_ended_at{};
  int restart_due = 0;  // the number (1..K) of the restart promised to this slot, waiting for a door; 0: none
  int door_from = 0;    // the generation that door must be at least
  // The replacement in the slot: its restart's number and the door it was given. A replacement whose door is gone
  // (door_is_gone) is killed (`moving`) and started again by the same restart (`move_due`): no other one of K.
  int restart = 0;
  std::string door_address;
  bool moving = false;
  bool move_due = false;
};

namespace {

sigset_t job_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
  return set;
}

bool failed(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += fmt::format("{}{}", out.empty() ? "" : ", ", r);
  return out;
}

void write_line(int fd, const std::string& text) {
  if (fd >= 0) (void)!::write(fd, text.data(), text.size());  // a pipe holds far more than a line
}

}  // namespace

void block_job_signals() {
  sigset_t set = job_signals();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  // A shell starts a background command with SIGINT ignored, and an ignored signal never
  // reaches the signalfd; sfrun's Ctrl-C must always stop the job. SIGHUP stays as inherited
  // (nohup).
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);
}

Supervisor::Supervisor(std::vector<RankLaunch> launches, std::vector<std::unique_ptr<RankLog>>& logs,
                       std::string job_dir, std::chrono::milliseconds grace, bool elastic, int max_restarts)
    : launches_(std::move(launches)), logs_(logs), job_dir_(std::move(job_dir)), grace_(grace),
      max_restarts_(elastic ? max_restarts : 0) {
  if (!elastic) return;
  elastic_.emplace(static_cast<int>(launches_.size()));
  for (auto& log : logs_) {
    log->set_line_listener([this](std::string_view line) {
      const std::string shown = elastic_->on_line(line);
      if (!shown.empty()) std::fputs(shown.c_str(), stderr);
      note_joins();
    });
  }
}

Supervisor::~Supervisor() {
  if (elastic_)
    for (auto& log : logs_) log->set_line_listener({});  // the logs outlive this supervisor
  for (auto& r : ranks_) {
    close_fd(r.out);
    close_fd(r.err);
    close_fd(r.ctl);
  }
  close_fd(signal_fd_);
}

void Supervisor::start_all() {
  started_ = Clock::now();
  for (size_t i = 0; i < launches_.size(); ++i) {
    const RankLaunch& l = launches_[i];
    Rank r;
    r.rank = l.rank;
    r.index = i;
    r.remote = l.remote;
    try {
      start_rank(r, l);
      ranks_.push_back(r);
    } catch (const Error& e) {
      start_error_ = fmt::format("sfrun: rank {} could not be started: {}\n", l.rank, e.what());
      stop(SIGTERM);
      return;
    }
  }
}

void Supervisor::reap() {
  int status = 0;
  for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
    // Besides the ranks, orphans of their process trees come here (sfrun is their subreaper).
    auto it = std::find_if(ranks_.begin(), ranks_.end(), [&](const Rank& r) { return r.running && r.pid == pid; });
    if (it == ranks_.end()) continue;
    Rank& r = *it;
    r.running = false;
    r.status = status;
    r.ended_at = Clock::now();
    close_fd(r.ctl);
    if (r.moving) {
      // sfrun killed it to move it (move_from_dead_doors): no failure, and its restart is not spent. What it left in
      // its group goes now, as after a failure (promise_restart).
      r.moving = false;
      if (stopping_ || r.removed) continue;
      r.restart_due = r.restart;
      r.door_from = r.join_generation + 1;
      r.move_due = true;
      ::kill(-r.pid, SIGKILL);
      continue;
    }
    if (failed(status) && !stopping_) {
      if (elastic_) {
        on_elastic_failure(r);
      } else {
        first_failure_ = r.rank;
        stop(SIGTERM);
      }
    }
  }
}

void Supervisor::on_elastic_failure(Rank& r) {
  if (r.removed) return;  // said when it was killed
  if (!r.joined) {
    // A replacement that could not join (the job ended, the door's world changed): it fails nothing.
    std::string line = fmt::format("sfrun: the replacement for rank {} {} before it joined", r.rank,
                                   describe_end(r.status, r.remote));
    if (const int i = promise_restart(r, r.join_generation + 1))
      line += fmt::format("; another will join (restart {} of {})", i, max_restarts_);
    fmt::print(stderr, "{}\n", line);
    return;
  }
  if (!elastic_->announced()) {
    // Its program does not train through train_elastic (or no rank got that far): the others cannot go on without
    // it, and fail fast as in a job that is not elastic.
    fmt::print(stderr, "sfrun: rank {} {}; no rank has said it trains elastic (sf::train_elastic), so the job stops\n",
               r.rank, describe_end(r.status, r.remote));
    first_failure_ = r.rank;
    stop(SIGTERM);
    return;
  }
  // After the last member the job is over, and the summary names the failure instead.
  if (!members_running()) return;
  std::string line =
      fmt::format("sfrun: rank {} {}; the elastic job goes on without it", r.rank, describe_end(r.status, r.remote));
  if (elastic_->is_member(r.rank))
    if (const int i = promise_restart(r, elastic_->generation() + 1))
      line += fmt::format("; a replacement will join (restart {} of {})", i, max_restarts_);
  fmt::print(stderr, "{}\n", line);
}

bool Supervisor::members_running() const {
  return std::any_of(ranks_.begin(), ranks_.end(), [&](const Rank& x) {
    return x.running && x.joined && elastic_->is_member(x.rank);
  });
}

int Supervisor::promise_restart(Rank& r, int door_from) {
  if (restarts_promised_ >= max_restarts_ || stopping_ || members_ended_ || !members_running()) return 0;
  r.restart_due = ++restarts_promised_;
  r.door_from = door_from;
  // What the process left in its group goes now, while its pid still names that group (it was reaped just now): a
  // replacement must not run beside it.
  ::kill(-r.pid, SIGKILL);
  return r.restart_due;
}

void Supervisor::note_joins() {
  for (auto& r : ranks_)
    if (!r.joined && elastic_->generation() > r.join_generation && elastic_->is_member(r.rank)) r.joined = true;
}

void Supervisor::move_from_dead_doors() {
  if (stopping_ || members_ended_) return;
  for (auto& r : ranks_) {
    if (!r.running || r.joined || r.moving || r.removed) continue;
    const auto door = elastic_->join_from(r.join_generation + 1);
    // The rank 0 whose door it waits at is rank 0 no longer: nobody will admit it there, and the library's joiner
    // would wait out its 300 s. It is killed now and started again once reaped (reap, start_replacements).
    if (!door || !door_is_gone(JoinLine{r.join_generation, r.door_address}, *door)) continue;
    r.moving = true;
    signal_rank(r, SIGKILL);
  }
}

void Supervisor::start_replacements() {
  if (stopping_ || members_ended_) return;
  for (auto& r : ranks_) {
    if (!r.restart_due || r.running) continue;
    if (const auto door = elastic_->join_from(r.door_from)) start_replacement(r, *door);
  }
}

void Supervisor::start_replacement(Rank& r, const JoinLine& door) {
  r.restart = r.restart_due;
  r.restart_due = 0;
  if (r.move_due) {
    r.move_due = false;
    fmt::print(stderr, "sfrun: the replacement for rank {} waited at the door of generation {}, whose rank 0 is gone; "
               "starting it again at generation {} ({})\n", r.rank, r.join_generation, door.generation, door.address);
  } else {
    ++restarts_started_;
    fmt::print(stderr, "sfrun: starting a replacement for rank {} (restart {} of {}); it joins generation {}\n",
               r.rank, r.restart, max_restarts_, door.generation);
  }
  // The last process's output ends in its log before the replacement's begins there.
  for (bool is_err : {false, true}) {
    int& fd = is_err ? r.err : r.out;
    for (int reads = 0; fd >= 0 && reads < 64 && pump(r, is_err); ++reads) {
    }
    close_fd(fd);
  }
  RankLog& log = *logs_[r.index];
  log.start_again(r.remote);
  if (r.joined) {
    r.member_status = r.status;
    r.member_ended_at = r.ended_at;
  }
  r.joined = false;
  r.join_generation = door.generation;
  r.door_address = door.address;
  const RankLaunch l = with_extra_env(launches_[r.index], {"SF_ELASTIC_JOIN=" + door.address});
  try {
    start_rank(r, l);
  } catch (const Error& e) {
    fmt::print(stderr, "sfrun: the replacement for rank {} could not be started: {}\n", r.rank, e.what());
  }
}

void Supervisor::start_rank(Rank& r, const RankLaunch& l) {
  Child c = spawn_child(l.spawn);
  r.pid = c.pid;
  r.out = c.out;
  r.err = c.err;
  r.ctl = c.in;
  r.running = true;
  if (r.ctl >= 0) {
    ::fcntl(r.ctl, F_SETFL, ::fcntl(r.ctl, F_GETFL) | O_NONBLOCK);
    write_line(r.ctl, l.stdin_first_line);
  }
  if (!r.remote) logs_[r.index]->write_pid(r.pid);
}

void Supervisor::stop_removed_ranks() {
  if (members_running()) return;
  members_ended_ = true;
  for (auto& r : ranks_) {
    r.restart_due = 0;
    if (!r.running || r.removed) continue;
    // SIGKILL ends a stopped process too: a frozen rank needs no SIGCONT first.
    r.removed = true;
    signal_rank(r, SIGKILL);
    if (r.joined)
      fmt::print(stderr, "sfrun: rank {} was removed from the job; stopped it\n", r.rank);
    else
      fmt::print(stderr, "sfrun: the replacement for rank {} had not joined when the job's members ended; stopped it\n",
                 r.rank);
  }
}

std::string Supervisor::describe_end(int status, bool remote) const {
  std::string how = describe_status(status);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  if (remote && code > 128 && code <= 128 + 64)
    how += fmt::format(" (its program died of signal {}, {})", code - 128, ::strsignal(code - 128));
  return how;
}

bool Supervisor::pump(Rank& r, bool is_err) {
  int& fd = is_err ? r.err : r.out;
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n > 0) {
    const std::string_view bytes(buf, static_cast<size_t>(n));
    if (is_err) logs_[r.index]->on_stderr(bytes);
    else logs_[r.index]->on_stdout(bytes);
    return true;
  }
  if (n == 0 || (errno != EAGAIN && errno != EINTR)) close_fd(fd);
  return false;
}

void Supervisor::signal_rank(Rank& r, int signo) {
  if (!r.running) return;
  if (r.remote) {
    if (signo == SIGKILL) {
      close_fd(r.ctl);  // the wrapper kills its program when its stdin closes
      ::kill(-r.pid, SIGKILL);
    } else {
      write_line(r.ctl, "TERM\n");  // a background program ignores SIGINT; TERM is what stops it
    }
    return;
  }
  if (::kill(-r.pid, signo) != 0) ::kill(r.pid, signo);
}

void Supervisor::stop(int signo) {
  if (stopping_) return;
  stopping_ = true;
  stop_started_ = Clock::now();
  kill_at_ = stop_started_ + grace_;
  for (auto& r : ranks_) {
    if (!r.running) continue;
    stopped_.push_back(r.rank);
    signal_rank(r, signo);
  }
}

void Supervisor::kill_all() {
  killed_ = true;
  for (auto& r : ranks_) signal_rank(r, SIGKILL);
}

void Supervisor::on_signal(int signo) {
  if (!stopping_) {
    interrupted_by_ = signo;
    stop(signo == SIGHUP ? SIGTERM : signo);
  } else if (!killed_) {
    kill_all();
  }
}

bool Supervisor::all_reaped() const {
  return std::none_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; });
}

JobResult Supervisor::run() {
  sigset_t set = job_signals();
  signal_fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  SF_ENFORCE(signal_fd_ >= 0, Error, "signalfd: {}", std::strerror(errno));
  // A rank's children that outlive it are reparented to sfrun, which reaps them, instead of to
  // an init that may not (a container's).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  start_all();
  using std::chrono::milliseconds;
  for (;;) {
    reap();
    if (elastic_ && !stopping_) {
      stop_removed_ranks();
      move_from_dead_doors();
      start_replacements();
    }
    const auto now = Clock::now();
    if (stopping_ && !killed_ && now >= kill_at_) kill_all();
    bool pipes_open = false;
    for (const auto& r : ranks_) pipes_open = pipes_open || r.out >= 0 || r.err >= 0;
    if (all_reaped()) {
      // A rank's children may hold its pipes; its output is drained for a moment, no longer.
      if (drain_until_ == Clock::time_point{}) drain_until_ = now + milliseconds(2000);
      if (!pipes_open || now >= drain_until_) break;
    }
    std::vector<pollfd> fds = {{signal_fd_, POLLIN, 0}};
    std::vector<std::pair<Rank*, bool>> owners = {{nullptr, false}};
    for (auto& r : ranks_) {
      for (bool is_err : {false, true}) {
        const int fd = is_err ? r.err : r.out;
        if (fd < 0) continue;
        fds.push_back({fd, POLLIN, 0});
        owners.push_back({&r, is_err});
      }
    }
    auto wake = now + milliseconds(1000);  // also a safety net for a missed SIGCHLD
    if (stopping_ && !killed_) wake = std::min(wake, kill_at_);
    if (drain_until_ != Clock::time_point{}) wake = std::min(wake, drain_until_);
    const auto wait_ms = std::max<int64_t>(0, std::chrono::duration_cast<milliseconds>(wake - now).count());
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait_ms)) < 0 && errno != EINTR)
      SF_THROW(Error, "poll: {}", std::strerror(errno));
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      bool child = false;
      while (::read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
        if (info.ssi_signo == SIGCHLD) child = true;
        else on_signal(static_cast<int>(info.ssi_signo));
      }
      // A rank that ended is judged by the membership as it stood then, before the output that came with the same
      // wake-up (the others' line about its loss) is read.
      if (child) reap();
    }
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) pump(*owners[i].first, owners[i].second);
  }
  return finish();
}

JobResult Supervisor::finish() {
  reap();  // orphans killed with their group
  for (auto& log : logs_) log->finish();
  for (auto& r : ranks_) {
    close_fd(r.out);
    close_fd(r.err);
    close_fd(r.ctl);
  }
  const auto now = Clock::now();
  JobResult res;
  if (stopping_) res.stop_time = std::chrono::duration_cast<std::chrono::milliseconds>(now - stop_started_);
  const std::string stopped =
      stopped_.empty() ? std::string()
                       : fmt::format("sfrun: stopped the ranks still running ({}) in {} ms\n", rank_list(stopped_),
                                     res.stop_time.count());
  if (!start_error_.empty()) {
    res.exit_code = 1;
    res.summary = start_error_ + stopped;
    return res;
  }
  if (elastic_ && !interrupted_by_) {
    // The first member of the last membership that failed. A replacement that never joined does not count; the
    // member whose place it was to take does.
    const Rank* first = nullptr;
    for (const auto& r : ranks_) {
      if (!elastic_->is_member(r.rank) || !failed(r.joined ? r.status : r.member_status)) continue;
      const auto ended = r.joined ? r.ended_at : r.member_ended_at;
      if (!first || ended < (first->joined ? first->ended_at : first->member_ended_at)) first = &r;
    }
    if (first) first_failure_ = first->rank;
  }
  if (first_failure_ >= 0) {
    const Rank& r = *std::find_if(ranks_.begin(), ranks_.end(), [&](const Rank& x) { return x.rank == first_failure_; });
    const RankLog& log = *logs_[r.index];
    const int status = r.joined ? r.status : r.member_status;
    res.failed_rank = r.rank;
    res.exit_code = exit_code_of(status);
    res.summary = fmt::format("sfrun: rank {} {} — see {}/stdout\n", r.rank, describe_end(status, r.remote),
                              log.dir());
    if (!log.last_stderr_line().empty())
      res.summary += fmt::format("sfrun: rank {} stderr: {}\n", r.rank, log.last_stderr_line());
    for (const auto& l : logs_) {
      if (l->comm_report().empty()) continue;
      res.summary += fmt::format("sfrun: {} (see {}/stderr)\n", l->comm_report(), l->dir());
      break;
    }
    res.summary += stopped;
    return res;
  }
  if (interrupted_by_) {
    res.exit_code = 128 + interrupted_by_;
    res.summary = fmt::format("sfrun: interrupted by SIG{}; logs in {}\n", sigabbrev_np(interrupted_by_), job_dir_) + stopped;
    return res;
  }
  const double seconds = std::chrono::duration<double>(now - started_).count();
  // Restarts are said where any was allowed and the membership changed, or one was started.
  const bool changed = elastic_ && elastic_->generation() > 0;
  const std::string restarts = max_restarts_ == 0 || (restarts_started_ == 0 && !changed)
                                   ? std::string()
                                   : fmt::format(" ({} restart{} of {} used)", restarts_started_,
                                                 restarts_started_ == 1 ? "" : "s", max_restarts_);
  if (changed) {
    const auto members = elastic_->members();
    res.summary = fmt::format("sfrun: the {} rank{} of generation {} ({}) exited 0 in {:.1f} s; {} of {} left the "
                              "job{}; logs in {}\n",
                              members.size(), members.size() == 1 ? "" : "s", elastic_->generation(),
                              rank_list(members), seconds,
                              ranks_.size() - members.size(), ranks_.size(), restarts, job_dir_);
    return res;
  }
  res.summary =
      fmt::format("sfrun: {} ranks exited 0 in {:.1f} s{}; logs in {}\n", ranks_.size(), seconds, restarts, job_dir_);
  return res;
}

}  // namespace sf::sfrun
