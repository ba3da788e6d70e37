// init() under mpirun: the rank, size and local rank come from Open MPI's environment, the
// backend is mpi, collectives default to the world group, and named groups work. Run by ctest
// as `mpirun -np 3`; exits non-zero naming the rank and check on the first failure.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "comm/bootstrap/init.h"
#include "comm/comm.h"

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sf::comm;
  int rank = -1;
  try {
    init(argc, argv);
    rank = get_rank();
    check(job().source == JobSpec::Source::kMpirun, "the job does not come from mpirun");
    check(job().backend == "mpi", "backend is " + job().backend + ", not mpi");
    check(rank == env_int("OMPI_COMM_WORLD_RANK"), "get_rank() differs from OMPI_COMM_WORLD_RANK");
    check(get_group_size() == env_int("OMPI_COMM_WORLD_SIZE"), "get_group_size() differs from OMPI_COMM_WORLD_SIZE");
    check(get_local_rank() == env_int("OMPI_COMM_WORLD_LOCAL_RANK"), "get_local_rank() differs");
    const int n = get_group_size();
    run_ranks([&] {
      const float sum = all_reduce(sf::Tensor::full({1000}, static_cast<float>(rank)), {}).data<float>()[999];
      check(sum == static_cast<float>(n * (n - 1) / 2), "world AllReduce gave " + std::to_string(sum));
      // Every rank but 0, in reverse order.
      if (rank != 0) {
        std::vector<int> ranks;
        for (int r = n - 1; r >= 1; --r) ranks.push_back(r);
        const sf::comm::Group g = create_group("tail", ranks);
        check(get_rank("tail") == n - 1 - rank, "rank in group 'tail'");
        const float s = all_reduce(sf::Tensor::full({1}, 1.0f), {.group = g}).item();
        check(s == static_cast<float>(n - 1), "AllReduce on group 'tail' gave " + std::to_string(s));
        destroy_group("tail");
      }
      barrier({});
    });
    release();
    std::printf("mpi_init: rank %d ok\n", rank);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_init FAILED on rank %d: %s\n", rank, e.what());
    return 1;
  }
}
