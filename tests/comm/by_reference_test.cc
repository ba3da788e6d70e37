// The by-reference algorithms (Algorithm::kByReference, comm/detail/by_reference.h) and the
// table's transport-dependent choices: inproc picks them for every data collective from
// kByReferenceMinBytes; f32
// results with inexact sums hold the same bits on every rank and run to run; a rank that
// closes mid-way is named by the others; the table refuses algorithms the transport cannot run.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>

#include <shardflow/comm/comm.h>
#include <shardflow/core/rng.h>
#include "rank_threads.h"
#include "wrappers.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

Tensor random_input(int64_t count, int rank) {
  Tensor x({count});
  fill_random(x, Distribution::kNormal, 0.0f, 1.0f, 23, static_cast<uint64_t>(rank));
  return x;
}

TEST(ByReference, TheTablePicksItOnInprocForLargePayloadsOnly) {
  auto world = make_inproc_world(2);
  const TransportCaps caps = transport_caps(*world[0], Collective::kAllReduce, 1000);
  EXPECT_TRUE(caps.by_reference);
  EXPECT_FALSE(caps.native);
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kBroadcast, Collective::kAllToAll})
    EXPECT_EQ(choose_algorithm(c, kByReferenceMinBytes, 2, caps), Algorithm::kByReference) << collective_name(c);
  // Small payloads: the send/recv algorithms, which need fewer rounds of messages.
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, 4 << 10, 2, caps), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(choose_algorithm(Collective::kAllGather, kByReferenceMinBytes - 4, 2, caps), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(Collective::kBarrier, 0, 2, caps), Algorithm::kDissemination);
  // A transport without the capability keeps the send/recv algorithms.
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, 4 << 20, 2, {}), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, 4 << 10, 2, {}), Algorithm::kRecursiveDoubling);
  // The crossover falls with the group: 1 MiB at 2 ranks, 512 KiB at 4, 64 KiB from 32.
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, 1 << 20, 2, {}), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, (1 << 20) + 4, 2, {}), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, 512 << 10, 4, {}), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, 1 << 20, 4, {}), Algorithm::kRing);
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, 64 << 10, 64, {}), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(choose_algorithm(Collective::kAllReduce, (64 << 10) + 4, 64, {}), Algorithm::kRing);
  // Native collectives win where the backend prefers them, and only there.
  const TransportCaps preferred{.native = true, .native_preferred = true};
  const TransportCaps supported{.native = true, .native_preferred = false};
  EXPECT_EQ(choose_algorithm(Collective::kReduceScatter, 4 << 20, 2, preferred), Algorithm::kNative);
  EXPECT_EQ(choose_algorithm(Collective::kReduceScatter, 4 << 20, 2, supported), Algorithm::kRing);
  EXPECT_EQ(resolve_algorithm(Collective::kReduceScatter, Algorithm::kNative, 4 << 20, 2, supported),
            Algorithm::kNative);
}

TEST(ByReference, AlgorithmsTheTransportCannotRunAreRefused) {
  auto world = make_inproc_world(1);
  Group g = world_group(world[0]);
  const Tensor x = Tensor::full({8}, 1.0f);
  try {
    all_reduce(x, {.group = g, .algorithm = Algorithm::kNative});
    FAIL() << "native AllReduce on inproc was not refused";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("native"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve_algorithm(Collective::kAllGather, Algorithm::kByReference, 64, 2, {}), InvalidArgument);
  EXPECT_THROW(resolve_algorithm(Collective::kBarrier, Algorithm::kByReference, 0, 2, {.by_reference = true}),
               InvalidArgument);
}

TEST(ByReference, InexactSumsHoldTheSameBitsOnEveryRankRunToRun) {
  for (int n : {2, 3, 8}) {
    const int64_t count = 100003 * n;  // n equal blocks: ReduceScatter's are AllReduce's
    std::vector<Tensor> inputs;
    for (int r = 0; r < n; ++r) inputs.push_back(random_input(count, r));
    auto run = [&](std::vector<Tensor>& sums, std::vector<Tensor>& scattered) {
      auto world = make_inproc_world(n);
      sums.assign(n, Tensor());
      scattered.assign(n, Tensor());
      commtest::run_ranks(n, [&](int r) {
        Group g = world_group(world[r]);
        sums[r] = all_reduce(inputs[r], {.group = g, .algorithm = Algorithm::kByReference, .timeout = 20s});
        scattered[r] = reduce_scatter(inputs[r], {.group = g, .algorithm = Algorithm::kByReference, .timeout = 20s});
      });
    };
    std::vector<Tensor> a, b, sa, sb;
    run(a, sa);
    run(b, sb);
    for (int r = 0; r < n; ++r) {
      ASSERT_TRUE(bitwise_equal(a[r], a[0])) << "n=" << n << " rank " << r;
      ASSERT_TRUE(bitwise_equal(b[r], a[0])) << "n=" << n << " second run, rank " << r;
      ASSERT_TRUE(bitwise_equal(sb[r], sa[r])) << "n=" << n << " ReduceScatter, second run, rank " << r;
      // ReduceScatter reduces in the same order as AllReduce: its block is AllReduce's.
      const int64_t k = count / n;
      for (int64_t i = 0; i < k; i += 4099) ASSERT_EQ(sa[r].f32()[i], a[0].f32()[r * k + i]) << "n=" << n;
    }
    for (int64_t i = 0; i < count; i += 997) {
      double ref = 0;
      for (int r = 0; r < n; ++r) ref += inputs[r].f32()[i];
      ASSERT_NEAR(a[0].f32()[i], ref, 1e-4) << "n=" << n << " element " << i;
    }
  }
}

TEST(ByReference, ClosedRankIsNamedByEveryOtherRank) {
  constexpr int n = 4, closed = 2;
  auto world = make_inproc_world(n);
  const auto start = Clock::now();
  auto errors = commtest::run_ranks_collect(n, [&](int r) {
    if (r == closed) {
      world[r]->close();
      return;
    }
    all_reduce(Tensor::full({1 << 16}, 1.0f),
               {.group = world_group(world[r]), .algorithm = Algorithm::kByReference, .timeout = 10s});
  });
  EXPECT_LT(Clock::now() - start, 5s) << "a closed rank must be named long before the timeout";
  for (int r = 0; r < n; ++r) {
    if (r == closed) continue;
    ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
    try {
      std::rethrow_exception(errors[r]);
    } catch (const PeerLost& e) {
      EXPECT_EQ(e.rank(), closed) << "rank " << r << ": " << e.what();
    }
  }
}

// One by-reference collective on `t`'s group (input: each rank's, shaped {4 * 3 << 14}).
Tensor run_by_reference(int which, const std::shared_ptr<Transport>& t, const Tensor& in) {
  const Group g = world_group(t);
  const Algorithm a = Algorithm::kByReference;
  switch (which) {
    case 0: return all_reduce(in, {.group = g, .algorithm = a, .timeout = 20s});
    case 1: return all_gather(in, {.group = g, .algorithm = a, .timeout = 20s});
    case 2: return reduce_scatter(in, {.group = g, .algorithm = a, .timeout = 20s});
    case 3: return broadcast(in, {.group = g, .root = 0, .algorithm = a, .timeout = 20s});
    default: return all_to_all(in, {.group = g, .split_count = g.size(), .algorithm = a, .timeout = 20s});
  }
}

TEST(ByReference, SlowPeersStillReadWhatTheirPeersPassed) {
  // Ranks 1..3 read every message 2 ms late while rank 0 scribbles over its input and output
  // the moment its call returns: the closing handshake must keep rank 0 in the call until the
  // others are done with its tensors (inexact sums, so a torn read shows in the bits).
  constexpr int n = 4;
  const int64_t count = 4 * (3 << 14);
  std::vector<Tensor> inputs;
  for (int r = 0; r < n; ++r) inputs.push_back(random_input(count, r));
  for (int which = 0; which < 5; ++which) {
    auto world = make_inproc_world(n);
    std::vector<Tensor> fast(n), slow(n);
    commtest::run_ranks(n, [&](int r) { fast[r] = run_by_reference(which, world[r], inputs[r]); });
    auto slow_world = make_inproc_world(n);
    commtest::run_ranks(n, [&](int r) {
      auto t = r == 0 ? slow_world[r] : std::make_shared<commtest::SlowReaderTransport>(slow_world[r], 2ms);
      Tensor in = inputs[r].clone();
      Tensor out = run_by_reference(which, t, in);
      if (r == 0) {
        in.fill(-7.0f);
        out.fill(-7.0f);
      } else {
        slow[r] = out;
      }
    });
    for (int r = 1; r < n; ++r) EXPECT_TRUE(bitwise_equal(slow[r], fast[r])) << "collective " << which << " rank " << r;
  }
}

}  // namespace
}  // namespace sf::comm
