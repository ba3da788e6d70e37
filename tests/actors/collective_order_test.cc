// The collective actor runs a group's collectives in program order on every rank: two
// independent AllReduces on group "pair" (ranks 0 and 1) whose inputs become ready in opposite
// orders on the two ranks still pair up. Each rank's delayed input waits for a Receive (on the
// world group, so on another collective actor) that a helper rank sends a pause into each step:
// on rank 0 the first AllReduce's input, on rank 1 the second's. The trace shows the opposite
// arrival orders; the sums show the pairing (a mispairing would add a to b).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <semaphore>
#include <string>
#include <thread>

#include <shardflow/comm/send_recv.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_builder.h>
#include "tests/actors/collective_world.h"

namespace sf {
namespace {

constexpr int kSteps = 3;
constexpr int64_t kTag = 7;
constexpr std::chrono::milliseconds kPause{30};

// Start (us since the trace's first event) of each firing, by node name and step.
std::map<std::pair<std::string, int64_t>, double> starts_of(const std::string& path) {
  std::ifstream f(path);
  const auto j = nlohmann::json::parse(f);
  std::map<std::pair<std::string, int64_t>, double> out;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") out[{e["name"].get<std::string>(), e["args"]["step"].get<int64_t>()}] = e["ts"].get<double>();
  return out;
}

TEST(CollectiveOrder, IndependentAllReducesPairUpWhateverOrderTheirInputsArrive) {
  auto world = comm::make_inproc_world(4);
  std::vector<std::map<std::pair<std::string, int64_t>, double>> starts(2);
  std::vector<std::vector<Tensor>> results(2);
  // started[r]: rank r has launched a step, so its helper may start the pause.
  std::counting_semaphore<kSteps> started[2] = {std::counting_semaphore<kSteps>(0),
                                                std::counting_semaphore<kSteps>(0)};
  commtest::run_ranks(4, [&](int r) {
    if (r >= 2) {  // the helper of rank r - 2: releases its delayed input a pause into each step
      comm::SendOptions o;
      o.group = comm::world_group(world[r]);
      o.dest = r - 2;
      o.sr_tag = kTag;
      for (int step = 0; step < kSteps; ++step) {
        started[r - 2].acquire();
        std::this_thread::sleep_for(kPause);
        comm::send(Tensor::full({64, 64}, 0.5f), o);
      }
      return;
    }
    CollectiveContext ctx = world_context(world[r]);
    ctx.add(comm::create_group(world[r], "pair", {0, 1}));
    ctx.timeout = actortest::kCollectiveTimeout;
    Graph g;
    GraphBuilder gb(g);
    CollectiveBuilder pair(gb, group_ref(ctx.groups.at("pair")));
    CollectiveBuilder all(gb, group_ref(ctx.groups.at("world")));
    const Value a = gb.input("a", {64, 64}), b = gb.input("b", {64, 64});
    const auto delayed = [&](Value v) { return gb.add(v, all.receive(kTag, r + 2, {64, 64}, DType::kF32, v)); };
    const Value a_in = r == 0 ? delayed(a) : gb.relu(a);
    const Value b_in = r == 1 ? delayed(b) : gb.relu(b);
    // Built in one order on both ranks: "AllReduce" (of a) is index 0, "AllReduce-1" index 1.
    const Value sum_a = pair.all_reduce(a_in), sum_b = pair.all_reduce(b_in);
    Runtime rt(g, {sum_a.id, sum_b.id}, actortest::with_collectives(ctx, /*trace=*/true));
    for (int step = 0; step < kSteps; ++step) {
      started[r].release();
      const auto& got =
          rt.run({{a.id, Tensor::full({64, 64}, 1.0f + r + step)}, {b.id, Tensor::full({64, 64}, 10.0f * (r + 1))}});
      results[r].push_back(got[0].clone());
      results[r].push_back(got[1].clone());
    }
    const std::string path =
        fmt::format("{}/collective_order_{}_{}.json", ::testing::TempDir(), static_cast<int>(::getpid()), r);
    rt.write_trace(path);
    starts[r] = starts_of(path);
    std::remove(path.c_str());
  });
  // A collective node's trace event starts when its inputs were all there.
  const auto start = [&](int r, const char* node, int64_t step) { return starts[r][std::make_pair(node, step)]; };
  for (int64_t step = 0; step < kSteps; ++step) {
    EXPECT_LT(start(0, "AllReduce-1", step), start(0, "AllReduce", step)) << "rank 0 sees b's input first";
    EXPECT_LT(start(1, "AllReduce", step), start(1, "AllReduce-1", step)) << "rank 1 sees a's input first";
  }
  for (int r = 0; r < 2; ++r)
    for (int step = 0; step < kSteps; ++step) {
      EXPECT_TRUE(bitwise_equal(results[r][2 * step], Tensor::full({64, 64}, 3.5f + 2 * step)))
          << "rank " << r << " step " << step << " sum of a: " << results[r][2 * step].to_vector()[0];
      EXPECT_TRUE(bitwise_equal(results[r][2 * step + 1], Tensor::full({64, 64}, 30.5f)))
          << "rank " << r << " step " << step << " sum of b: " << results[r][2 * step + 1].to_vector()[0];
    }
}

}  // namespace
}  // namespace sf
