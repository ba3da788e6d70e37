// sfrun: starts the N ranks of a shardflow job and fails the whole job fast, naming the rank
// (docs/sfrun.md).
//
//     sfrun -n 4 -- ./train                       # 4 ranks on this host, zmq over tcp
//     sfrun -n 8 --hostfile hosts -- ./train      # hosts `node1 slots=4` and `node2 slots=4`
//
// Exit status: 0 when every rank exits 0; the first failed rank's exit code (128+N for
// signal N); 128+N when sfrun itself got signal N; 2 for bad input, refused before any rank
// starts. With --elastic only the ranks still in the job at its end count (supervisor.h).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <shardflow/core/error.h>
#include "tools/sfrun/job.h"
#include "tools/sfrun/options.h"

int main(int argc, char** argv) {
  using namespace sf::sfrun;
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    const Options o = parse_options(args);
    if (o.mpi_rank) return run_mpi_rank(o);
    if (o.transport == "mpi") {
      char self[4096];
      const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
      return run_mpi_job(o, n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv[0]));
    }
    return run_zmq_job(o);
  } catch (const HelpRequested&) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  } catch (const sf::Error& e) {
    fmt::print(stderr, "sfrun: error: {}\n", e.what());
    return 2;
  }
}
