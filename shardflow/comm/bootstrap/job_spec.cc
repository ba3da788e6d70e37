#include <shardflow/comm/bootstrap/job_spec.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <shardflow/core/error.h>

namespace sf::comm {

namespace {

const char* const kOwnedFlags[] = {"--devices", "--backend", "--comm-timeout"};
// The longest --comm-timeout (about 116 days, "never" in practice): converting a larger value
// (1e300, inf) to milliseconds overflows, and so would a deadline that adds it to the clock.
constexpr double kMaxTimeoutSeconds = 1e7;
constexpr const char* kDebugFlag = "--comm-debug";

int parse_int(const std::string& text, const std::string& what, int min) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  SF_ENFORCE(!text.empty() && *end == '\0' && errno == 0 && v >= min && v <= (1 << 20), InvalidArgument,
             "{}='{}' is not an integer >= {}", what, text, min);
  return static_cast<int>(v);
}

// The value of `name` if set and non-empty.
std::optional<std::string> get(const EnvReader& env, const std::string& name) {
  auto v = env(name);
  if (v && v->empty()) return std::nullopt;
  return v;
}

int get_int(const EnvReader& env, const std::string& name, int fallback, int min) {
  auto v = get(env, name);
  return v ? parse_int(*v, name, min) : fallback;
}

// A flag's value from the consumed arguments ("--devices", "8" or "--devices=8").
std::optional<std::string> flag(const std::vector<std::string>& args, const std::string& name) {
  std::optional<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) {
      SF_ENFORCE(i + 1 < args.size(), InvalidArgument, "{} needs a value", name);
      out = args[++i];
    } else if (args[i].rfind(name + "=", 0) == 0) {
      out = args[i].substr(name.size() + 1);
    }
  }
  return out;
}

void check_rank(const JobSpec& s, const std::string& rank_var, const std::string& size_var) {
  SF_ENFORCE(s.rank < s.size, InvalidArgument, "{}={} is outside a world of {}={} ranks", rank_var, s.rank, size_var,
             s.size);
}

}  // namespace

std::string_view source_name(JobSpec::Source s) {
  switch (s) {
    case JobSpec::Source::kSingle: return "single process";
    case JobSpec::Source::kDevices: return "--devices";
    case JobSpec::Source::kLauncher: return "sfrun";
    case JobSpec::Source::kMpirun: return "mpirun";
    case JobSpec::Source::kSlurm: return "Slurm";
  }
  return "?";
}

EnvReader process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::vector<std::string> consume_comm_args(int& argc, char** argv) {
  std::vector<std::string> taken;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    bool spaced = false, joined = a == kDebugFlag;
    for (const char* f : kOwnedFlags) {
      spaced = spaced || a == f;
      joined = joined || a.rfind(std::string(f) + "=", 0) == 0;
    }
    if (spaced) {
      SF_ENFORCE(i + 1 < argc, InvalidArgument, "{} needs a value", a);
      taken.push_back(a);
      taken.push_back(argv[++i]);
    } else if (joined) {
      taken.push_back(a);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return taken;
}

JobSpec resolve_job(const std::vector<std::string>& args, const EnvReader& env) {
  JobSpec s;
  for (const auto& a : args) s.debug = s.debug || a == kDebugFlag;
  if (auto t = flag(args, "--comm-timeout")) {
    char* end = nullptr;
    const double sec = std::strtod(t->c_str(), &end);
    SF_ENFORCE(!t->empty() && *end == '\0' && sec > 0 && sec <= kMaxTimeoutSeconds, InvalidArgument,
               "--comm-timeout {}: the timeout must be a positive number of seconds, at most {}", *t,
               kMaxTimeoutSeconds);
    s.timeout = std::chrono::milliseconds(static_cast<int64_t>(sec * 1000 + 0.5));
  }
  const auto devices = flag(args, "--devices");
  const auto sf_rank = get(env, "SF_RANK");
  const auto ompi_rank = get(env, "OMPI_COMM_WORLD_RANK");
  const auto slurm_rank = get(env, "SLURM_PROCID");

  if (devices) {
    const int n = parse_int(*devices, "--devices", 1);
    const char* launched = sf_rank ? "sfrun" : ompi_rank ? "mpirun" : nullptr;
    SF_ENFORCE(!launched, InvalidArgument,
               "--devices {} asks for {} virtual ranks in this process, but it was started by {} as one rank of a job: "
               "use one or the other",
               n, n, launched);
    s.source = JobSpec::Source::kDevices;
    s.size = s.local_ranks = n;
  } else if (sf_rank) {
    s.source = JobSpec::Source::kLauncher;
    s.rank = parse_int(*sf_rank, "SF_RANK", 0);
    auto size = get(env, "SF_WORLD_SIZE");
    SF_ENFORCE(size, InvalidArgument, "SF_RANK is set but SF_WORLD_SIZE is not (a job started by sfrun has both)");
    s.size = parse_int(*size, "SF_WORLD_SIZE", 1);
    check_rank(s, "SF_RANK", "SF_WORLD_SIZE");
    s.local_rank = get_int(env, "SF_LOCAL_RANK", 0, 0);
    s.backend = "zmq";
  } else if (ompi_rank) {
    s.source = JobSpec::Source::kMpirun;
    s.rank = parse_int(*ompi_rank, "OMPI_COMM_WORLD_RANK", 0);
    auto size = get(env, "OMPI_COMM_WORLD_SIZE");
    SF_ENFORCE(size, InvalidArgument, "OMPI_COMM_WORLD_RANK is set but OMPI_COMM_WORLD_SIZE is not");
    s.size = parse_int(*size, "OMPI_COMM_WORLD_SIZE", 1);
    check_rank(s, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
    s.local_rank = get_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, 0);
    s.backend = "mpi";
  } else if (slurm_rank) {
    s.source = JobSpec::Source::kSlurm;
    s.rank = parse_int(*slurm_rank, "SLURM_PROCID", 0);
    auto size = get(env, "SLURM_NTASKS");
    SF_ENFORCE(size, InvalidArgument, "SLURM_PROCID is set but SLURM_NTASKS is not");
    s.size = parse_int(*size, "SLURM_NTASKS", 1);
    check_rank(s, "SLURM_PROCID", "SLURM_NTASKS");
    s.local_rank = get_int(env, "SLURM_LOCALID", 0, 0);
    s.backend = "zmq";
  }

  if (auto b = flag(args, "--backend")) s.backend = *b;
  else if (auto e = get(env, "SF_BACKEND")) s.backend = *e;
  SF_ENFORCE(s.backend == "inproc" || s.backend == "zmq" || s.backend == "mpi", InvalidArgument,
             "backend '{}' is not one of inproc, zmq, mpi", s.backend);

  const bool one_process = s.source == JobSpec::Source::kSingle || s.source == JobSpec::Source::kDevices;
  if (s.backend == "inproc") {
    SF_ENFORCE(one_process, InvalidArgument,
               "backend inproc joins only the ranks of one process, but {} started this process as rank {} of {}",
               source_name(s.source), s.rank, s.size);
  } else if (s.backend == "mpi") {
    SF_ENFORCE(s.source == JobSpec::Source::kMpirun || s.source == JobSpec::Source::kSingle, InvalidArgument,
               "backend mpi needs a job started by mpirun; this one comes from {}", source_name(s.source));
  } else if (s.source != JobSpec::Source::kDevices) {  // zmq between processes
    if (auto r = get(env, "SF_RENDEZVOUS")) {
      s.rendezvous = *r;
    } else if (auto addr = get(env, "MASTER_ADDR")) {
      auto port = get(env, "MASTER_PORT");
      SF_ENFORCE(port, InvalidArgument, "MASTER_ADDR is set but MASTER_PORT is not");
      s.rendezvous = "tcp://" + *addr + ":" + std::to_string(parse_int(*port, "MASTER_PORT", 1));
    }
    if (s.size > 1) {
      SF_ENFORCE(!s.rendezvous.empty(), InvalidArgument,
                 "backend zmq needs a rendezvous: set SF_RENDEZVOUS (e.g. tcp://host:29500) or MASTER_ADDR and "
                 "MASTER_PORT (sfrun sets it)");
      auto secret = get(env, "SF_JOB_SECRET");
      SF_ENFORCE(secret, InvalidArgument,
                 "backend zmq needs the job secret every rank presents: set SF_JOB_SECRET to the same value on every "
                 "rank (sfrun sets it)");
      s.secret = *secret;
    }
    // A replacement rank of an elastic job (sfrun --max-restarts): it joins the running world
    // at this door instead of the rendezvous.
    if (auto door = get(env, "SF_ELASTIC_JOIN")) {
      SF_ENFORCE(s.source == JobSpec::Source::kLauncher && !s.secret.empty(), InvalidArgument,
                 "SF_ELASTIC_JOIN is set, but only a rank that sfrun starts in an elastic job of several ranks can join "
                 "one");
      s.join = *door;
    }
  }
  return s;
}

}  // namespace sf::comm
