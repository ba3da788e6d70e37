#include "tools/sfrun/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::sfrun {

namespace {

std::unique_ptr<CLI::App> make_app(Options& o) {
  auto app = std::make_unique<CLI::App>(
      "sfrun: starts the N ranks of a shardflow job on this host or on the hosts of a hostfile, writes\n"
      "each rank's output to LOG_DIR/JOB/rank.R/{stdout,stderr}, and stops the whole job, naming the\n"
      "rank, when one rank fails.",
      "sfrun");
  app->add_option("-n,--np", o.n, "number of ranks (world size)")->required();
  app->add_option("--nproc-per-node", o.nproc_per_node, "at most K ranks on each host");
  app->add_option("--hostfile", o.hostfile, "hosts, one per line: `host [slots=K] [addr=A]`");
  app->add_option("--transport", o.transport, "zmq (default) or mpi (the ranks are started by mpirun)");
  app->add_option("--log-dir", o.log_dir, "where the per-rank logs go (default log_output)");
  app->add_option("--job-id", o.job_id, "the job's name under the log dir (default: first unused 1, 2, ...)");
  app->add_option("--timeout", o.timeout, "seconds a collective may wait before it fails naming the silent ranks");
  app->add_flag("--tee", o.tee, "also print every rank's output here, each line prefixed [rank R]");
  app->add_flag("--dry-run", o.dry_run, "print the rank -> host plan and exit");
  app->add_option("--agent", o.agent,
                  "how to run a shell command line on a remote host: {host} is replaced by the host, else the "
                  "host is appended; the command line comes last (default `ssh -o BatchMode=yes`)");
  app->add_option("--master-addr", o.master_addr, "the rendezvous address (default: rank 0's host)");
  app->add_option("--master-port", o.master_port, "the rendezvous port (default: a free one)");
  app->add_option("--grace", o.grace, "seconds between SIGTERM and SIGKILL when stopping ranks (default 5)");
  app->add_option("--probe-timeout", o.probe_timeout, "seconds each host has to answer the preflight (default 10)");
  app->add_option("--mpirun", o.mpirun, "--transport mpi: the mpirun program (default mpirun)");
  app->add_option("--mpirun-args", o.mpirun_args, "--transport mpi: extra arguments for mpirun");
  app->add_option("--elastic", o.elastic,
                  "a rank that fails does not stop the job: the ranks left agree on the new membership and go on "
                  "while at least MIN of them remain (zmq only; docs/elastic.md)")
      ->type_name("MIN:MAX");
  app->add_option("--max-restarts", o.max_restarts_text,
                  "with --elastic: start a replacement for a member that fails, at most K in all, which joins the "
                  "running job with the same rank number and logs (default 0: none)")
      ->type_name("K");
  app->add_flag("--mpi-rank", o.mpi_rank, "internal: keep one rank's logs under mpirun")->group("");
  // Everything from PROGRAM on belongs to the program, with or without `--` before it: it is
  // what CLI11 leaves over.
  app->prefix_command();
  app->footer("PROGRAM ARGS...: the program every rank runs, after `--` or after the last sfrun option");
  return app;
}

// The longest duration in seconds (about 116 days, as for the ranks' --comm-timeout): sfrun
// turns --grace and --probe-timeout into milliseconds and deadlines, which a larger value (or
// inf) would overflow.
constexpr double kMaxSeconds = 1e7;

// A whole number of at most 9 digits, no sign (so it fits an int), or nullopt.
std::optional<int> whole_number(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// --elastic MIN:MAX: two whole numbers with 1 <= MIN <= n <= MAX, and only where sfrun starts the ranks.
void check_elastic(Options& o) {
  if (o.elastic.empty()) return;
  SF_ENFORCE(o.transport == "zmq", InvalidArgument,
             "--elastic needs the zmq transport: Open MPI 4.1 cannot shrink a communicator (see docs/elastic.md)");
  const std::string_view text = o.elastic;
  const auto colon = text.find(':');
  const auto min = whole_number(text.substr(0, colon));
  const auto max = colon == std::string_view::npos ? std::nullopt : whole_number(text.substr(colon + 1));
  SF_ENFORCE(min && max, InvalidArgument, "--elastic {}: must be MIN:MAX, two whole numbers (e.g. 2:4)",
             brief_text(o.elastic, 40));
  SF_ENFORCE(*min >= 1, InvalidArgument, "--elastic {}: MIN must be at least 1", o.elastic);
  SF_ENFORCE(*min <= *max, InvalidArgument, "--elastic {}: MIN {} is more than MAX {}", o.elastic, *min, *max);
  SF_ENFORCE(*min <= o.n, InvalidArgument, "--elastic {}: MIN {} is more than the {} ranks of -n {}", o.elastic, *min,
             o.n, o.n);
  SF_ENFORCE(o.n <= *max, InvalidArgument, "--elastic {}: -n {} starts more ranks than MAX {}", o.elastic, o.n, *max);
  o.elastic_min = *min;
  o.elastic_max = *max;
}

// --max-restarts K: a whole number, 0 or more, and only with --elastic.
void check_max_restarts(Options& o) {
  if (!o.max_restarts_text) return;
  const std::string& text = *o.max_restarts_text;
  SF_ENFORCE(!o.elastic.empty(), InvalidArgument,
             "--max-restarts {}: only an elastic job starts replacement ranks; add --elastic MIN:MAX",
             brief_text(text, 40));
  const auto k = whole_number(text);
  SF_ENFORCE(k.has_value(), InvalidArgument, "--max-restarts {}: must be a whole number, 0 or more",
             brief_text(text, 40));
  o.max_restarts = *k;
}

void check_values(Options& o) {
  SF_ENFORCE(o.n >= 1, InvalidArgument, "-n {}: a job needs at least one rank", o.n);
  SF_ENFORCE(!o.nproc_per_node || *o.nproc_per_node >= 1, InvalidArgument,
             "--nproc-per-node {}: must be at least 1", *o.nproc_per_node);
  SF_ENFORCE(o.transport == "zmq" || o.transport == "mpi", InvalidArgument,
             "--transport {}: must be zmq or mpi", brief_text(o.transport, 40));
  SF_ENFORCE(!o.timeout || (*o.timeout > 0 && *o.timeout <= kMaxSeconds), InvalidArgument,
             "--timeout {}: must be a positive number of seconds, at most {}", *o.timeout, kMaxSeconds);
  SF_ENFORCE(!o.master_port || (*o.master_port >= 1 && *o.master_port <= 65535), InvalidArgument,
             "--master-port {}: must be in 1..65535", *o.master_port);
  SF_ENFORCE(o.grace >= 0 && o.grace <= kMaxSeconds, InvalidArgument, "--grace {}: must be in 0..{} seconds", o.grace,
             kMaxSeconds);
  SF_ENFORCE(o.probe_timeout > 0 && o.probe_timeout <= kMaxSeconds, InvalidArgument,
             "--probe-timeout {}: must be positive, at most {} seconds", o.probe_timeout, kMaxSeconds);
  check_elastic(o);
  check_max_restarts(o);
  SF_ENFORCE(!o.log_dir.empty(), InvalidArgument, "--log-dir: must not be empty");
  SF_ENFORCE(o.job_id.find('/') == std::string::npos && o.job_id != "." && o.job_id != "..", InvalidArgument,
             "--job-id '{}': must be a plain name (no '/')", brief_text(o.job_id, 80));
  if (!o.command.empty() && o.command.front() == "--") o.command.erase(o.command.begin());
  SF_ENFORCE(!o.command.empty(), InvalidArgument, "no program given: sfrun -n N [options] -- PROGRAM ARGS...");
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options o;
  auto app = make_app(o);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app->parse(reversed);
  } catch (const CLI::CallForHelp&) {
    throw HelpRequested();
  } catch (const CLI::ParseError& e) {
    SF_THROW(InvalidArgument, "{}", brief_text(e.what(), 300));  // it may quote a huge argument
  }
  o.command = app->remaining();
  check_values(o);
  return o;
}

std::string usage() {
  Options o;
  auto app = make_app(o);
  return "Usage: sfrun -n N [options] [--] PROGRAM ARGS...\n\n" + app->help();
}

}  // namespace sf::sfrun
