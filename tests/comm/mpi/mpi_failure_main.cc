// Failure detection of the mpi transport, run under `mpirun -np 3` (or more). Rank 1 joins
// one AllReduce, then stays silent for the second: every other rank must throw PeerLost
// naming rank 1 within the timeout plus the notice grace (comm/detail/call.h). Rank 1 then
// closes its endpoint and exits cleanly; a collective on a fresh group must now fail on the
// others at once (long before its own timeout), again naming rank 1; the survivors wait for
// each other before they close. Exits non-zero with the reason on any deviation.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/comm/comm.h>
#include <shardflow/comm/mpi/transport.h>
#include "mpi/mpi_test_main.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr auto kTimeout = 1000ms;
constexpr auto kBound = 6s;          // timeout + grace + slack on a loaded, oversubscribed machine
constexpr auto kLongTimeout = 60s;   // the closed peer must be reported long before this
constexpr int kSilent = 1;

void fail(const std::string& why) { throw std::runtime_error(why); }

// Runs `op` and checks that it throws PeerLost naming kSilent within `bound`.
template <class Op>
void expect_names_silent(const char* what, Op op, Clock::duration bound) {
  const auto start = Clock::now();
  try {
    op();
  } catch (const PeerLost& e) {
    const auto took = Clock::now() - start;
    if (e.rank() != kSilent) fail(fmt::format("{}: PeerLost names rank {}, not {}: {}", what, e.rank(), kSilent, e.what()));
    if (took > bound)
      fail(fmt::format("{}: took {} ms, more than {} ms", what,
                       std::chrono::duration_cast<std::chrono::milliseconds>(took).count(),
                       std::chrono::duration_cast<std::chrono::milliseconds>(bound).count()));
    std::printf("%s: PeerLost after %lld ms: %s\n", what,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()), e.what());
    return;
  }
  fail(fmt::format("{}: returned although rank {} did not take part", what, kSilent));
}

int run_checks(const std::shared_ptr<Transport>& world) {
  const int me = world->rank();
  if (world->size() < 3) fail("needs at least 3 ranks");
  Group g = world_group(world);
  all_reduce(Tensor::full({64}, 1.0f), {.group = g, .timeout = kLongTimeout});  // everyone is up
  if (me == kSilent) {
    std::this_thread::sleep_for(kBound);  // silent through the others' deadline
    world->close();
    std::printf("rank %d: skipped the AllReduce and closed\n", me);
    return 0;
  }
  expect_names_silent("silent rank", [&] {
    all_reduce(Tensor::full({1000}, 1.0f), {.group = g, .timeout = kTimeout});
  }, kBound);
  Group fresh = create_group(world, "after", {0, 1, 2});
  expect_names_silent("closed rank", [&] {
    all_reduce(Tensor::full({1000}, 1.0f), {.group = fresh, .timeout = kLongTimeout});
  }, kBound + 4s);  // it may still be sleeping through its silent phase
  // A survivor that ended now would close its endpoint while another survivor still waits in
  // the collective above, and that one could then name the closed survivor instead of rank 1.
  std::vector<int> survivors;
  for (int r = 0; r < world->size(); ++r)
    if (r != kSilent) survivors.push_back(r);
  all_reduce(Tensor::full({1}, 1.0f), {.group = create_group(world, "survivors", survivors), .timeout = kLongTimeout});
  return 0;
}

}  // namespace
}  // namespace sf::comm

int main() { return sf::commtest::run_mpi_test("mpi failure test", sf::comm::run_checks); }
