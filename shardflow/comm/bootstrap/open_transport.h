// open_transports(): the endpoints of this process's ranks for a JobSpec — one per virtual
// rank for inproc, the process's own for zmq and mpi. Kept apart from init() because it is the
// only place that knows every backend.
//
// Threading: call from one thread.
#pragma once

#include <memory>
#include <vector>

#include <shardflow/comm/bootstrap/job_spec.h>
#include <shardflow/comm/transport.h>

namespace sf::comm {

// In rank order. Throws InvalidArgument for a backend this build lacks, and whatever the
// backend throws when its world cannot be formed (PeerLost naming ranks that never joined).
std::vector<std::shared_ptr<Transport>> open_transports(const JobSpec& spec);

}  // namespace sf::comm
