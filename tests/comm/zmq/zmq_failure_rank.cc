// One rank of the multi-process failure test (process_failure_test.cc): joins the zmq world
// described by SF_RANK, SF_WORLD_SIZE, SF_RENDEZVOUS and SF_JOB_SECRET, prints "looping", and
// runs 1 MiB AllReduces back to back until the driver kills or freezes one rank. Then it
// prints one line, "PEERLOST rank=<r> at_ns=<steady clock> what=<message>", and stays up with
// its endpoint open until the driver kills it: a rank that left at once would itself be lost
// to the ranks still waiting, which would then rightly name it instead. Any other failure
// exits 1, a wrong result 2, and finishing kMaxSeconds of work 0.
//
// Usage: zmq_failure_rank <timeout_ms> <heartbeat_ms>   (data endpoints on tcp://127.0.0.1)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include <shardflow/comm/comm.h>
#include <shardflow/comm/zmq/transport.h>

using namespace sf;
using namespace sf::comm;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kMaxSeconds = 60;

int run(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <timeout_ms> <heartbeat_ms>\n", argv[0]);
    return 1;
  }
  const std::chrono::milliseconds timeout(std::atol(argv[1])), heartbeat(std::atol(argv[2]));
  ZmqJoin join = zmq_join_from_env();
  join.data_scheme = ZmqScheme::kTcp;
  join.options.heartbeat_interval = heartbeat;
  join.options.heartbeat_timeout = 5 * heartbeat;
  join.options.connect_timeout = std::chrono::seconds(20);
  auto world = make_zmq_world(join);
  Group g = world_group(world);
  const int n = world->size();
  const Tensor x = Tensor::full({256 << 10}, static_cast<float>(join.rank + 1));
  const float want = static_cast<float>(n * (n + 1) / 2);
  std::printf("looping\n");
  std::fflush(stdout);
  const auto end = Clock::now() + std::chrono::seconds(kMaxSeconds);
  try {
    while (Clock::now() < end) {
      Tensor y = all_reduce(x, {.group = g, .timeout = timeout});
      if (y.f32()[0] != want || y.f32()[y.numel() - 1] != want) {
        std::printf("WRONG %g != %g\n", y.f32()[0], want);
        return 2;
      }
    }
  } catch (const PeerLost& e) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
    std::printf("PEERLOST rank=%d at_ns=%lld what=%s\n", e.rank(), static_cast<long long>(ns), e.what());
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(kMaxSeconds));
    std::_Exit(3);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zmq_failure_rank: %s\n", e.what());
    return 1;
  }
}
