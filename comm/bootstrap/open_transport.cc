#include "comm/bootstrap/open_transport.h"

#include "comm/inproc/transport.h"
#include "comm/mpi/transport.h"
#include "core/error.h"

namespace sf::comm {

std::vector<std::shared_ptr<Transport>> open_transports(const JobSpec& spec) {
  if (spec.backend == "inproc") return make_inproc_world(spec.size);
  if (spec.backend == "mpi") {
    auto t = make_mpi_world();
    SF_ENFORCE(t->rank() == spec.rank && t->size() == spec.size, InvalidArgument,
               "mpi: MPI says rank {} of {}, the environment said rank {} of {}", t->rank(), t->size(), spec.rank,
               spec.size);
    return {t};
  }
  SF_THROW(InvalidArgument, "backend '{}' is not available in this build", spec.backend);
}

}  // namespace sf::comm
