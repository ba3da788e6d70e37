// The three ways sfrun runs, each from parsed options to sfrun's exit code:
//   run_zmq_job  — --transport zmq: plan, preflight, start every rank (here or through the
//                  agent), supervise (supervisor.h);
//   run_mpi_job  — --transport mpi: Open MPI starts the ranks; sfrun replaces itself with
//                  `mpirun ... SFRUN --mpi-rank ... -- PROGRAM ARGS`, so mpirun's own
//                  signal handling and fail-fast apply, and each rank gets a log keeper;
//   run_mpi_rank — that log keeper: one rank's program under a one-rank supervisor, writing
//                  LOG_DIR/JOB/rank.R/ with R from OMPI_COMM_WORLD_RANK.
// Bad input throws sf::InvalidArgument before anything starts.
//
// Threading: call once from main.
#pragma once

#include <string>

#include "tools/sfrun/options.h"

namespace sf::sfrun {

int run_zmq_job(const Options& o);
// `self` is this program's path, for mpirun to start on every host.
int run_mpi_job(const Options& o, const std::string& self);
int run_mpi_rank(const Options& o);

// The current directory (sf::IoError if it cannot be read).
std::string current_dir();

}  // namespace sf::sfrun
