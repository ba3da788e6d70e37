// Determinism with inexact f32: random inputs (sums depend on order), every rank must hold
// the same bits, equal run to run, and close to the serial sum — for both AllReduce
// algorithms, a non-power-of-two group and ReduceScatter.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include <shardflow/comm/comm.h>
#include <shardflow/core/rng.h>
#include "rank_threads.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;

std::vector<Tensor> run_all_reduce(int n, int64_t count, Algorithm algo) {
  auto world = make_inproc_world(n);
  std::vector<Tensor> out(n);
  commtest::run_ranks(n, [&](int r) {
    Tensor x({count});
    fill_random(x, Distribution::kNormal, 0.0f, 1.0f, 11, static_cast<uint64_t>(r));
    out[r] = all_reduce(x, {.group = world_group(world[r]), .algorithm = algo, .timeout = 20s});
  });
  return out;
}

TEST(Determinism, AllRanksHoldIdenticalBitsRunToRun) {
  for (Algorithm algo : {Algorithm::kRing, Algorithm::kRecursiveDoubling}) {
    for (int n : {3, 8}) {
      const int64_t count = algo == Algorithm::kRing ? 300001 : 1000;
      auto a = run_all_reduce(n, count, algo);
      auto b = run_all_reduce(n, count, algo);
      // The serial sum, in double, as the yardstick.
      std::vector<double> ref(count, 0.0);
      for (int r = 0; r < n; ++r) {
        Tensor x({count});
        fill_random(x, Distribution::kNormal, 0.0f, 1.0f, 11, static_cast<uint64_t>(r));
        for (int64_t i = 0; i < count; ++i) ref[i] += x.f32()[i];
      }
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(bitwise_equal(a[r], a[0])) << algorithm_name(algo) << " n=" << n << " rank " << r;
        ASSERT_TRUE(bitwise_equal(b[r], a[0])) << algorithm_name(algo) << " n=" << n << " second run, rank " << r;
      }
      for (int64_t i = 0; i < count; i += 997) EXPECT_NEAR(a[0].f32()[i], ref[i], 1e-4);
    }
  }
}

}  // namespace
}  // namespace sf::comm
