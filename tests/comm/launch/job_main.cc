// init() in one process of a real multi-process job: `job_main SOURCE BACKEND RANK_VAR SIZE_VAR
// LOCAL_VAR` checks that the job comes from SOURCE (mpirun, sfrun, Slurm) over BACKEND, that
// get_rank(), get_group_size() and get_local_rank() equal the launcher's variables, that
// collectives default to the world group and that named groups work. Run by ctest under
// `mpirun -np 3` and by run_env_job.sh with sfrun's and Slurm's variables; exits non-zero
// naming the rank and check on the first failure.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/comm.h>

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
    check(argc == 6, "usage: job_main SOURCE BACKEND RANK_VAR SIZE_VAR LOCAL_VAR");
    rank = get_rank();
    check(source_name(job().source) == argv[1], "the job comes from " + std::string(source_name(job().source)));
    check(job().backend == argv[2], "backend is " + job().backend);
    check(rank == env_int(argv[3]), std::string("get_rank() differs from ") + argv[3]);
    check(get_group_size() == env_int(argv[4]), std::string("get_group_size() differs from ") + argv[4]);
    check(get_local_rank() == env_int(argv[5]), std::string("get_local_rank() differs from ") + argv[5]);
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
    std::printf("job_main: rank %d ok\n", rank);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "job_main FAILED on rank %d: %s\n", rank, e.what());
    return 1;
  }
}
