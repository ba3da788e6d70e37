#include <shardflow/comm/bootstrap/open_transport.h>

#include <shardflow/comm/inproc/transport.h>
#include <shardflow/comm/mpi/transport.h>
#include <shardflow/comm/zmq/transport.h>
#include <shardflow/core/error.h>

namespace sf::comm {

namespace {
constexpr std::chrono::milliseconds kAdmissionWait{300000};
}  // namespace

std::vector<std::shared_ptr<Transport>> open_transports(const JobSpec& spec) {
  if (spec.backend == "inproc") return make_inproc_world(spec.size);
  if (spec.backend == "mpi") {
    auto t = make_mpi_world();
    SF_ENFORCE(t->rank() == spec.rank && t->size() == spec.size, InvalidArgument,
               "mpi: MPI says rank {} of {}, the environment said rank {} of {}", t->rank(), t->size(), spec.rank,
               spec.size);
    return {t};
  }
  if (spec.backend == "zmq") {
    if (spec.source == JobSpec::Source::kDevices || spec.size == 1) return make_zmq_world(spec.size);
    if (!spec.join.empty()) {
      ZmqOptions o;
      o.secret = spec.secret;
      // Admission waits for the members' next step boundary; a job that ends first refuses it.
      return {join_zmq_world(spec.join, spec.rank, o, kAdmissionWait)};
    }
    ZmqJoin join;
    join.rank = spec.rank;
    join.size = spec.size;
    join.rendezvous = spec.rendezvous;
    join.options.secret = spec.secret;
    return {make_zmq_world(join)};
  }
  SF_THROW(InvalidArgument, "backend '{}' is not available in this build", spec.backend);
}

}  // namespace sf::comm
