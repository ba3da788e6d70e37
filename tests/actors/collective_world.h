// Test support for graphs with collective nodes: one Runtime per virtual rank of an inproc
// world, each rank on its own thread, as N virtual devices in one process run.
//
// run_world(n, fn) calls fn(rank, ctx) on n threads; ctx holds the world group of a fresh
// inproc world and a short collective timeout, so a broken pairing fails in seconds. The first
// failure is rethrown on the test thread. A rank still running after the deadline aborts the
// process (tests/comm/rank_threads.h): the hard timeout of every multi-rank test.
#pragma once

#include <chrono>
#include <functional>

#include <shardflow/actors/collective_context.h>
#include <shardflow/actors/runtime.h>
#include <shardflow/comm/inproc/transport.h>
#include "tests/comm/rank_threads.h"

namespace sf::actortest {

inline constexpr std::chrono::milliseconds kCollectiveTimeout{5000};

inline void run_world(int n, const std::function<void(int rank, const CollectiveContext& ctx)>& fn,
                      std::chrono::milliseconds timeout = kCollectiveTimeout) {
  auto world = comm::make_inproc_world(n);
  commtest::run_ranks(n, [&](int rank) {
    CollectiveContext ctx = world_context(world[rank]);
    ctx.timeout = timeout;
    fn(rank, ctx);
  });
}

inline RuntimeOptions with_collectives(const CollectiveContext& ctx, bool trace = false) {
  RuntimeOptions o;
  o.collectives = ctx;
  o.trace = trace;
  return o;
}

}  // namespace sf::actortest
