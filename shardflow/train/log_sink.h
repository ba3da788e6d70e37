/// @file
/// The per-process log sink: where the lines of LossMonitor, TimeMonitor and a program's own
/// per-rank output go, so that logs stay readable with many virtual ranks in one process.
/// Every line is written whole, in one write under one mutex, so lines of different ranks never
/// mix within a line; which ranks reach stdout is a choice (the `--log-ranks` option):
///
/// @verbatim
///   rank0 (default)  rank 0's lines on stdout exactly as the seeds print them
///                    ("epoch: 1 step: 50, loss is 2.2421417236328125"); every rank's lines
///                    also in its rank file when a job directory is set;
///   all              every rank's lines on stdout as "[rank r] <line>" (and in its rank
///                    file when a job directory is set);
///   files            nothing per rank on stdout; each rank's lines in its rank file,
///                    <job_dir>/rank.<r>/stdout (log_output/<n>/rank.<r>/stdout, made on
///                    the first line, when no job directory is set).
/// @endverbatim
///
/// This concerns a process holding several ranks (--devices N). A process holding one rank
/// (sfrun, mpirun, Slurm), or a thread with no rank, writes its lines unprefixed to stdout
/// whatever the choice: sfrun already keeps each such process's stdout in its rank file.
///
/// @code
///   sf::set_log_ranks(sf::parse_log_ranks(log_ranks), several ? sf::new_job_dir("log_output") : "");
///   sf::comm::run_ranks([&] { ... model.train(1, data, {std::make_shared<sf::LossMonitor>(50)}); });
/// @endcode
///
/// Threading: every function is thread-safe; set_log_ranks() belongs before the ranks start.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

namespace sf {

/// Which ranks of a process holding several print to stdout (see above).
enum class LogRanks { kRank0, kAll, kFiles };

/// "rank0", "all" or "files"; anything else is refused with InvalidArgument
/// "--log-ranks 'x': expected one of rank0, all, files".
LogRanks parse_log_ranks(std::string_view text);
/// The option string of `ranks` ("rank0", "all", "files").
std::string_view log_ranks_name(LogRanks ranks);

/// Chooses which ranks print and the job directory whose `rank.R/stdout` files take every
/// rank's lines ("" for none; rank_log.h new_job_dir makes one).
void set_log_ranks(LogRanks ranks, std::string job_dir = "");
/// The current choice (kRank0 until set).
LogRanks get_log_ranks();
/// The job directory set (or made by files mode); "" for none.
std::string log_job_dir();

/// Where the sink's stdout lines go: std::cout by default; a program or test may capture them.
/// `out` must outlive its use; set_log_stdout(std::cout) restores the default.
void set_log_stdout(std::ostream& out);

/// Writes one line of the calling rank's output (without its newline) where the choice sends it.
void log_line(std::string_view line);
/// Writes `line` and a newline to `out` in one write, under the sink's mutex, and flushes: for
/// a caller that picked its own stream (LossMonitor(per_print, out)).
void write_line(std::ostream& out, std::string_view line);
/// The stream of `job_dir/rank.R/stdout` (R = `rank`), opened once and shared with the sink's own
/// lines to that file (RankLog writes through it). IoError naming a file it cannot make.
std::ostream& rank_log_file(const std::string& job_dir, int rank);

}  // namespace sf
