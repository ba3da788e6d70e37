// A rank that runs until stopped, for sfrun's launch tests: init() from sfrun's variables, then
// an AllReduce every 50 ms, printing `rank R step N` after each, for SECONDS (default 120).
//   loop_main [SECONDS] [--comm-timeout S]
// Exits 0 when the time is up, 1 naming the error when a collective fails (a peer died or
// went silent).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/comm/comm.h>

int main(int argc, char** argv) {
  int rank = -1;
  try {
    sf::comm::init(argc, argv);
    rank = sf::comm::get_rank();
    const double seconds = argc > 1 ? std::atof(argv[1]) : 120;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    sf::comm::run_ranks([&] {
      for (int step = 0; std::chrono::steady_clock::now() < end; ++step) {
        sf::comm::all_reduce(sf::Tensor::full({16}, 1.0f), {});
        std::printf("rank %d step %d\n", rank, step);
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    sf::comm::release();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loop_main FAILED on rank %d: %s\n", rank, e.what());
    return 1;
  }
}
