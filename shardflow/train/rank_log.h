/// @file
/// Per-rank logs in the seeds' layout, for a process that holds several virtual ranks
/// (--devices N). Each rank writes `log_output/<job>/rank.<r>/stdout`; a process holding one
/// rank writes to its stdout, where sfrun keeps the same layout for it (docs/sfrun.md).
///
/// @code
///   const std::string job_dir = holds_several_ranks ? sf::new_job_dir("log_output") : "";
///   sf::comm::run_ranks([&] { sf::RankLog log(job_dir); log.out() << "epoch: ..."; });
/// @endcode
///
/// A RankLog's file is the one the log sink (train/log_sink.h) writes that rank's lines to, so
/// a program's own lines and LossMonitor's share it in order; for lines that must never mix
/// with other ranks' on stdout, prefer sf::log_line and set_log_ranks.
///
/// Threading: new_job_dir() from one thread (before the ranks start); a RankLog belongs to
/// the rank that made it.
#pragma once

#include <iostream>
#include <string>

namespace sf {

/// Creates and returns `log_dir/<job>`, the job being the first of 1, 2, 3, ... not yet under
/// log_dir (as sfrun numbers its jobs). Throws IoError naming the directory it cannot create.
std::string new_job_dir(const std::string& log_dir);

/// One rank's log: its own file under a job directory, or stdout.
class RankLog {
 public:
  /// job_dir empty: stdout. Otherwise `job_dir/rank.<r>/stdout` of the calling rank
  /// (comm::get_rank()).
  explicit RankLog(const std::string& job_dir);
  /// The stream to write the rank's lines to.
  std::ostream& out() { return file_ ? *file_ : std::cout; }
  const std::string& path() const { return path_; }  ///< empty for stdout

 private:
  std::ostream* file_ = nullptr;  // the sink's (rank_log_file), open for the process's life
  std::string path_;
};

}  // namespace sf
