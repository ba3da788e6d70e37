/// @file
/// JobSpec: where this process's ranks come from, decided once from its command line and
/// environment, before any socket opens. The sources, first match wins:
/// @verbatim
///   --devices N          N virtual ranks in this process, inproc transport (the default job's
///                        mode; no launcher, no network);
///   SF_RANK/SF_WORLD_SIZE  set by sfrun for each rank it starts (+ SF_LOCAL_RANK,
///                        SF_LOCAL_WORLD_SIZE, SF_RENDEZVOUS, SF_JOB_SECRET; a replacement
///                        rank of an elastic job also gets SF_ELASTIC_JOIN, the door it joins at);
///   OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE  under Open MPI's mpirun (+ ..._LOCAL_RANK/_SIZE);
///   SLURM_PROCID/SLURM_NTASKS  under srun (+ SLURM_LOCALID, SLURM_NTASKS_PER_NODE); the
///                        rendezvous is SF_RENDEZVOUS, or MASTER_ADDR and MASTER_PORT as in
///                        PyTorch;
///   none of these        one rank.
/// @endverbatim
/// The backend is inproc for --devices and a single rank, mpi under mpirun, zmq under sfrun and
/// Slurm; `--backend` or SF_BACKEND overrides it where the environment allows (zmq between
/// processes needs a rendezvous and a job secret; mpi needs mpirun; `--devices N --backend zmq`
/// runs the N virtual ranks over real sockets).
///
/// Every inconsistency is refused here with InvalidArgument naming the argument or variable.
///
/// Threading: pure functions.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sf::comm {

/// This process's part of the job: its ranks, the world size and the transport backend.
struct JobSpec {
  /// Where the ranks came from (the sources above).
  enum class Source {
    kSingle,    ///< none of them: one rank
    kDevices,   ///< --devices N
    kLauncher,  ///< sfrun
    kMpirun,    ///< Open MPI's mpirun
    kSlurm,     ///< srun
  };
  Source source = Source::kSingle;  ///< which source decided the job
  std::string backend = "inproc";  ///< "inproc", "zmq" or "mpi"
  int rank = 0;                    ///< this process's first world rank
  int size = 1;                    ///< world size
  int local_ranks = 1;             ///< ranks held by this process (N for --devices N, else 1)
  int local_rank = 0;              ///< this process's index among the processes of its host
  std::string rendezvous;          ///< zmq: the endpoint rank 0 binds, e.g. tcp://10.0.0.1:29500
  std::string secret;              ///< zmq: the job secret every peer must present
  std::string join;                ///< zmq: a running elastic job's door to join at (SF_ELASTIC_JOIN)
  std::optional<std::chrono::milliseconds> timeout;  ///< --comm-timeout SECONDS
  bool debug = false;              ///< --comm-debug (comm/debug.h)
};

/// The source's name in messages.
std::string_view source_name(JobSpec::Source s);

/// Reads the environment through `getenv` (std::getenv in production, a map in tests).
using EnvReader = std::function<std::optional<std::string>(const std::string&)>;
/// The EnvReader of this process's environment (std::getenv).
EnvReader process_env();

/// Decides the job from the arguments this layer owns (see consume_comm_args) and the
/// environment.
JobSpec resolve_job(const std::vector<std::string>& comm_args, const EnvReader& env);

/// Removes from argv the arguments the comm layer owns — `--devices N`, `--backend NAME`,
/// `--comm-timeout SECONDS`, `--comm-debug` (also in `--flag=value` form) — and returns them;
/// argc shrinks to match, so the program's own parser never sees them.
std::vector<std::string> consume_comm_args(int& argc, char** argv);

}  // namespace sf::comm
