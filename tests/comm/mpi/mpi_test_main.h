// The main() of a test program run under mpirun: runs checks(world) on this rank and turns
// any exception into "<what> FAILED on rank r: ..." on stderr and exit code 1, reported
// before the endpoint is destroyed (which lingers until the peers have closed).
#pragma once

#include <cstdio>
#include <exception>
#include <memory>

#include <shardflow/comm/mpi/transport.h>

namespace sf::commtest {

template <class Checks>
int run_mpi_test(const char* what, Checks checks) {
  try {
    auto world = comm::make_mpi_world();
    try {
      return checks(world);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s FAILED on rank %d: %s\n", what, world->rank(), e.what());
      std::fflush(stderr);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s FAILED: %s\n", what, e.what());
    std::fflush(stderr);
    return 1;
  }
}

}  // namespace sf::commtest
