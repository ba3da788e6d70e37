// The buffer-ownership contract (comm/transport.h): inproc passes tensors by reference, so a
// collective must never send a buffer its caller can reach. Here receivers read every message
// late (SlowReaderTransport) while one rank overwrites its input and output the moment its
// collective returns; every other rank must still get exact results.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <shardflow/comm/comm.h>
#include "rank_threads.h"
#include "reference.h"
#include "wrappers.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;

enum class Kind { kRing, kRecDbl, kAllGather, kReduceScatter, kBroadcast, kAllToAll, kSend };

class Ownership : public ::testing::TestWithParam<Kind> {};

TEST_P(Ownership, CallerMayOverwriteItsTensorsAsSoonAsTheCallReturns) {
  const int n = 4;
  const Kind kind = GetParam();
  auto world = make_inproc_world(n);
  const int64_t count = kind == Kind::kRecDbl ? 64 : 4096;
  std::vector<Tensor> inputs, outputs(n), expected(n);
  for (int r = 0; r < n; ++r) inputs.push_back(commtest::make_input({count}, DType::kF32, ReduceOp::kSum, r, 9));
  Tensor sum = commtest::reduce_all(inputs, ReduceOp::kSum);
  commtest::run_ranks(n, [&](int r) {
    // Rank 0 reads at full speed; the others read every message 2 ms late.
    auto t = r == 0 ? world[r] : std::make_shared<commtest::SlowReaderTransport>(world[r], 2ms);
    Group g = world_group(t);
    Tensor in = inputs[r].clone();
    Tensor out;
    switch (kind) {
      case Kind::kRing: out = all_reduce(in, {.group = g, .algorithm = Algorithm::kRing, .timeout = 20s}); break;
      case Kind::kRecDbl:
        out = all_reduce(in, {.group = g, .algorithm = Algorithm::kRecursiveDoubling, .timeout = 20s});
        break;
      case Kind::kAllGather: out = all_gather(in, {.group = g, .timeout = 20s}); break;
      case Kind::kReduceScatter: out = reduce_scatter(in, {.group = g, .timeout = 20s}); break;
      case Kind::kBroadcast: out = broadcast(in, {.group = g, .root = 0, .timeout = 20s}); break;
      case Kind::kAllToAll: out = all_to_all(in, {.group = g, .split_count = n, .timeout = 20s}); break;
      case Kind::kSend:
        if (r == 0) {
          for (int p = 1; p < n; ++p) send(in, {.group = g, .dest = p, .sr_tag = 3});
        } else {
          out = receive({.group = g, .src = 0, .sr_tag = 3, .shape = {count}, .timeout = 20s});
        }
        break;
    }
    if (r == 0) {  // scribble at once over everything this rank can reach
      in.fill(-7.0f);
      if (out.defined()) out.fill(-7.0f);
    } else {
      outputs[r] = out;
    }
  });
  for (int r = 1; r < n; ++r) {
    Tensor want;
    switch (kind) {
      case Kind::kRing:
      case Kind::kRecDbl: want = sum; break;
      case Kind::kAllGather: want = commtest::concat0(inputs); break;
      case Kind::kReduceScatter: want = commtest::rows_copy(sum, r * count / n, (r + 1) * count / n); break;
      case Kind::kBroadcast:
      case Kind::kSend: want = inputs[0]; break;
      case Kind::kAllToAll: {
        std::vector<Tensor> parts;
        for (int s = 0; s < n; ++s) parts.push_back(commtest::rows_copy(inputs[s], r * count / n, (r + 1) * count / n));
        want = commtest::concat0(parts);
      }
    }
    EXPECT_TRUE(bitwise_equal(outputs[r], want)) << "rank " << r << " read a buffer rank 0 overwrote";
  }
}

std::string kind_name(Kind k) {
  static const char* kNames[] = {"AllReduceRing", "AllReduceRecDbl", "AllGather", "ReduceScatter",
                                 "Broadcast",     "AlltoAll",        "SendReceive"};
  return kNames[static_cast<int>(k)];
}

INSTANTIATE_TEST_SUITE_P(Inproc, Ownership,
                         ::testing::Values(Kind::kRing, Kind::kRecDbl, Kind::kAllGather, Kind::kReduceScatter,
                                           Kind::kBroadcast, Kind::kAllToAll, Kind::kSend),
                         [](const ::testing::TestParamInfo<Kind>& info) { return kind_name(info.param); });

}  // namespace
}  // namespace sf::comm
