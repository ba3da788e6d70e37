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
  bool removed = false;  // elastic: sfrun killed it, outside the membership, once every member had ended
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
                       std::string job_dir, std::chrono::milliseconds grace, bool elastic)
    : launches_(std::move(launches)), logs_(logs), job_dir_(std::move(job_dir)), grace_(grace) {
  if (!elastic) return;
  elastic_.emplace(static_cast<int>(launches_.size()));
  for (auto& log : logs_) {
    log->set_line_listener([this](std::string_view line) {
      const std::string shown = elastic_->on_line(line);
      if (!shown.empty()) std::fputs(shown.c_str(), stderr);
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
      if (!r.remote) logs_[i]->write_pid(r.pid);
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
    close_fd(r.ctl);
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

void Supervisor::on_elastic_failure(const Rank& r) {
  elastic_failures_.push_back(r.rank);
  if (r.removed) return;  // said when it was killed
  // After the last member the job is over, and the summary names the failure instead.
  const bool members_left = std::any_of(ranks_.begin(), ranks_.end(), [&](const Rank& x) {
    return x.running && elastic_->is_member(x.rank);
  });
  if (members_left)
    fmt::print(stderr, "sfrun: rank {} {}; the elastic job goes on without it\n", r.rank, describe_end(r));
}

void Supervisor::stop_removed_ranks() {
  for (const auto& r : ranks_)
    if (r.running && elastic_->is_member(r.rank)) return;
  for (auto& r : ranks_) {
    if (!r.running || r.removed) continue;
    // SIGKILL ends a stopped process too: a frozen rank needs no SIGCONT first.
    r.removed = true;
    signal_rank(r, SIGKILL);
    fmt::print(stderr, "sfrun: rank {} was removed from the job; stopped it\n", r.rank);
  }
}

std::string Supervisor::describe_end(const Rank& r) const {
  std::string how = describe_status(r.status);
  const int code = WIFEXITED(r.status) ? WEXITSTATUS(r.status) : 0;
  if (r.remote && code > 128 && code <= 128 + 64)
    how += fmt::format(" (its program died of signal {}, {})", code - 128, ::strsignal(code - 128));
  return how;
}

void Supervisor::pump(Rank& r, bool is_err) {
  int& fd = is_err ? r.err : r.out;
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n > 0) {
    const std::string_view bytes(buf, static_cast<size_t>(n));
    if (is_err) logs_[r.index]->on_stderr(bytes);
    else logs_[r.index]->on_stdout(bytes);
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    close_fd(fd);
  }
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
    if (elastic_ && !stopping_) stop_removed_ranks();
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
      while (::read(signal_fd_, &info, sizeof(info)) == sizeof(info))
        if (info.ssi_signo != SIGCHLD) on_signal(static_cast<int>(info.ssi_signo));
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
    const auto it = std::find_if(elastic_failures_.begin(), elastic_failures_.end(),
                                 [&](int rank) { return elastic_->is_member(rank); });
    if (it != elastic_failures_.end()) first_failure_ = *it;
  }
  if (first_failure_ >= 0) {
    const Rank& r = *std::find_if(ranks_.begin(), ranks_.end(), [&](const Rank& x) { return x.rank == first_failure_; });
    const RankLog& log = *logs_[r.index];
    res.failed_rank = r.rank;
    res.exit_code = exit_code_of(r.status);
    res.summary = fmt::format("sfrun: rank {} {} — see {}/stdout\n", r.rank, describe_end(r), log.dir());
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
  if (elastic_ && elastic_->generation() > 0) {
    const auto members = elastic_->members();
    res.summary = fmt::format("sfrun: the {} rank{} of generation {} ({}) exited 0 in {:.1f} s; {} of {} left the job; "
                              "logs in {}\n",
                              members.size(), members.size() == 1 ? "" : "s", elastic_->generation(),
                              rank_list(members), seconds,
                              ranks_.size() - members.size(), ranks_.size(), job_dir_);
    return res;
  }
  res.summary = fmt::format("sfrun: {} ranks exited 0 in {:.1f} s; logs in {}\n", ranks_.size(), seconds, job_dir_);
  return res;
}

}  // namespace sf::sfrun
