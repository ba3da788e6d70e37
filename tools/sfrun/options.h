// Options: sfrun's command line, parsed with CLI11 into one plain struct
// (`sfrun -n N [options] -- PROGRAM ARGS...`, docs/sfrun.md). Parsing checks only the
// form of each value; what needs the hostfile or the machine (slots, ports, hosts) is checked by
// plan.h and preflight.h.
//
// Threading: pure functions.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace sf::sfrun {

struct Options {
  int n = 0;                            // -n: world size
  std::optional<int> nproc_per_node;    // at most this many ranks per host
  std::string hostfile;                 // lines `host [slots=K] [addr=A]`; empty: all ranks here
  std::string transport = "zmq";        // zmq (sfrun starts the ranks) or mpi (through mpirun)
  std::string log_dir = "log_output";   // logs go to <log_dir>/<job_id>/rank.<r>/
  std::string job_id;                   // empty: the first unused 1, 2, 3, ... under log_dir
  std::optional<double> timeout;        // seconds a collective may wait (--comm-timeout of init())
  bool tee = false;                     // also stream every rank's lines, prefixed "[rank r] "
  bool dry_run = false;                 // print the plan, start nothing
  std::string agent = "ssh -o BatchMode=yes";  // how a remote host runs a shell command line
  std::string master_addr;              // empty: rank 0's host address (127.0.0.1 here)
  std::optional<int> master_port;       // empty: a free port, picked and checked
  double grace = 5;                     // seconds between SIGTERM and SIGKILL when stopping
  double probe_timeout = 10;            // seconds each host has to answer the preflight
  std::string mpirun = "mpirun";        // --transport mpi: the mpirun program
  std::string mpirun_args;              // --transport mpi: extra words for mpirun
  std::string elastic;                  // --elastic MIN:MAX as given; empty: one failed rank stops the job
  int elastic_min = 0;                  // parsed from `elastic`: the fewest ranks the job may go on with,
  int elastic_max = 0;                  // and the most it may have (1 <= MIN <= n <= MAX)
  std::optional<std::string> max_restarts_text;  // --max-restarts K as given (only with --elastic)
  int max_restarts = 0;                 // parsed from it: how many replacement ranks the job may start in all
  std::vector<std::string> command;     // PROGRAM ARGS...
  bool mpi_rank = false;                // internal: this process is one rank's log keeper under mpirun
};

// Thrown by parse_options for -h/--help.
struct HelpRequested : std::exception {
  const char* what() const noexcept override { return "help requested"; }
};

// Parses sfrun's arguments (without argv[0]). Throws HelpRequested for -h/--help, sf::InvalidArgument with CLI11's message
// for a malformed line, or with the rule broken for a bad value (`-n 0`, `--transport tcp`, `--elastic 3:2`,
// `--max-restarts` without `--elastic`).
Options parse_options(const std::vector<std::string>& args);

// sfrun's usage text (--help).
std::string usage();

}  // namespace sf::sfrun
