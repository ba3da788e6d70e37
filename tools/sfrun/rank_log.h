// RankLog: where one rank's output goes — LOG_DIR/JOB/rank.R/stdout and stderr, written as the
// bytes arrive, and with --tee also sfrun's own stdout/stderr, one whole line at a time with a
// `[rank R] ` prefix. It also keeps what the supervisor's summary quotes: the rank's last
// stderr line and the first comm timeout report ("shardflow comm: rank R: OP timed out; ..."),
// and for a remote rank takes the wrapper's `@sfrun-pid N` line (remote.h) off its stdout and
// writes N to rank.R/pid (a local rank's pid is written there at spawn). A line listener, where
// set, sees every whole line of both streams (an elastic job's supervisor reads the ranks'
// membership lines).
//
// Threading: one thread (the supervisor's). Owns its two files.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace sf::sfrun {

class RankLog {
 public:
  // Creates rank_dir (must not be a file) and truncates stdout and stderr in it.
  RankLog(int rank, std::string rank_dir, bool tee, bool expect_pid_marker);
  ~RankLog();
  RankLog(const RankLog&) = delete;
  RankLog& operator=(const RankLog&) = delete;

  void on_stdout(std::string_view bytes);
  void on_stderr(std::string_view bytes);
  // Ends both streams: a last line without a newline still counts.
  void finish();
  // A new process takes the rank's place (an elastic job's replacement): what the last one left
  // unfinished ends as by finish(), and its output goes on into the same files, appended; a remote
  // one's first stdout line is again its wrapper's pid line.
  void start_again(bool expect_pid_marker);
  void write_pid(pid_t pid);
  // Called with each whole line of stdout and stderr, without its newline (an empty function: none).
  void set_line_listener(std::function<void(std::string_view)> listener) { listener_ = std::move(listener); }

  int rank() const { return rank_; }
  const std::string& dir() const { return dir_; }
  pid_t pid() const { return pid_; }  // on the rank's host; 0 while unknown
  const std::string& last_stderr_line() const { return last_err_; }
  const std::string& comm_report() const { return comm_report_; }

 private:
  struct Stream {
    int fd = -1;       // the log file
    int tee_fd = -1;   // sfrun's stdout/stderr, or -1
    std::string partial;
  };
  void feed(Stream& s, std::string_view bytes, bool is_err);
  void line(Stream& s, std::string_view text, bool is_err);

  int rank_;
  std::string dir_;
  bool await_marker_;
  std::string marker_buf_;
  pid_t pid_ = 0;
  Stream out_, err_;
  std::string last_err_, comm_report_;
  std::function<void(std::string_view)> listener_;
};

}  // namespace sf::sfrun
