// Bad input is refused with InvalidArgument naming the collective, the value and the rule,
// before any message is sent (a counting transport proves no send or receive happened).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <shardflow/comm/comm.h>
#include "refusal_fixture.h"
#include "wrappers.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;

using Validation = commtest::RefusalTest;

const Tensor kX = Tensor::full({6, 2}, 1.0f);

TEST_F(Validation, BroadcastRootOutOfRange) {
  expect_refused([&] { broadcast(kX, {.group = group_, .root = 4, .timeout = 100ms}); },
                 {"Broadcast", "root 4", "[0, 4)"});
  expect_refused([&] { broadcast(kX, {.group = group_, .root = -1, .timeout = 100ms}); }, {"root -1"});
}

TEST_F(Validation, AlltoAllSplitNotDivisible) {
  expect_refused([&] { all_to_all(Tensor::full({6, 3}, 1.0f), {.group = group_, .split_count = 4, .timeout = 100ms}); },
                 {"AlltoAll", "not divisible by split_count 4", "f32(6, 3)"});
  expect_refused([&] { all_to_all(kX, {.group = group_, .split_count = 3, .timeout = 100ms}); },
                 {"split_count 3 must equal the group size 4"});
  expect_refused([&] { all_to_all(kX, {.group = group_, .split_count = 4, .split_dim = 2, .timeout = 100ms}); },
                 {"split_dim 2 is out of range"});
  expect_refused([&] { all_to_all(kX, {.group = group_, .split_count = 4, .concat_dim = -3, .timeout = 100ms}); },
                 {"concat_dim -3"});
}

TEST_F(Validation, ReduceScatterAndAllGatherShapes) {
  expect_refused([&] { reduce_scatter(Tensor::full({6}, 1.0f), {.group = group_, .timeout = 100ms}); },
                 {"ReduceScatter", "dim 0 of input f32(6,) is not divisible by the group size 4"});
  expect_refused([&] { all_gather(Tensor::scalar(1.0f), {.group = group_, .timeout = 100ms}); },
                 {"AllGather", "scalar"});
}

TEST_F(Validation, OptionsThemselves) {
  expect_refused([&] { all_reduce(kX, {.group = Group(), .timeout = 100ms}); }, {"AllReduce", "options.group is not set"});
  expect_refused([&] { all_reduce(kX, {.group = group_, .timeout = 0ms}); }, {"timeout 0 ms must be positive"});
  expect_refused([&] { all_reduce(Tensor(), {.group = group_}); }, {"undefined"});
  expect_refused([&] { all_reduce(kX, {.group = group_, .op = static_cast<ReduceOp>(9)}); }, {"reduce op 9"});
  expect_refused([&] { all_reduce(kX, {.group = group_, .algorithm = Algorithm::kPairwise}); },
                 {"AllReduce", "'pairwise' does not implement"});
  expect_refused([&] { barrier({.group = group_, .algorithm = Algorithm::kRing}); }, {"Barrier"});
  expect_refused([&] { all_reduce_async(kX, {.group = group_, .timeout = -5ms}); }, {"timeout -5 ms"});
}

TEST_F(Validation, SendReceivePeersAndTags) {
  expect_refused([&] { send(kX, {.group = group_, .dest = 4}); }, {"Send", "dest 4 is outside"});
  expect_refused([&] { send(kX, {.group = group_, .dest = 0}); }, {"dest 0 is this rank itself"});
  expect_refused([&] { send(kX, {.group = group_, .dest = 1, .sr_tag = -1}); }, {"sr_tag -1"});
  expect_refused([&] { receive({.group = group_, .src = 7, .shape = {2}}); }, {"Receive", "src 7"});
}

}  // namespace
}  // namespace sf::comm
