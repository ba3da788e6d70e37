/// @file
/// init(): makes this process's ranks — MindSpore's mindspore.communication.init(). It reads
/// where the ranks come from (comm/bootstrap/job_spec.h: --devices N, sfrun, mpirun, Slurm, or
/// one rank), opens the transport (inproc, zmq or mpi), and binds the ranks so that
/// get_rank(), create_group() and the collectives' default group work (comm/rank_context.h).
/// The same program then runs unchanged on 8 virtual devices or on 8 processes:
///
/// @code
///     int main(int argc, char** argv) {
///       sf::comm::init(argc, argv);
///       sf::comm::run_ranks([] {
///         Tensor x = ...;                         // this rank's data
///         Tensor y = sf::comm::all_reduce(x, {}); // on the world group
///         if (sf::comm::get_rank() == 0) ...
///       });
///     }
/// @endcode
///
/// Threading: init() and release() from the main thread only, once each; run_ranks() from the
/// main thread.
#pragma once

#include <functional>

#include <shardflow/comm/bootstrap/job_spec.h>

namespace sf::comm {

/// Takes the comm layer's arguments out of argv (see consume_comm_args) and starts the job they
/// and the environment describe. Refuses a second call, and any inconsistency, before opening a
/// socket.
void init(int& argc, char** argv);
/// Starts the job `spec` describes.
void init(const JobSpec& spec);
/// True once init() has started the job.
bool initialized();
/// The job init() started.
const JobSpec& job();

/// Runs fn once for each rank of this process, each on its own thread bound to its rank (a
/// process with one rank runs it on the calling thread). When one rank throws, its endpoint is
/// closed so its peers fail at once instead of waiting for their timeout; after every rank has
/// returned, the first exception in time is rethrown.
void run_ranks(const std::function<void()>& fn);

/// Ends the job: closes this process's endpoints and forgets its ranks (MindSpore's release()).
void release();

}  // namespace sf::comm
