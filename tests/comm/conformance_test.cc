// Conformance suite: every collective x dtype (f32, i32) x element count (0, 1, 7, 1000,
// 1000003) x group (sizes 1, 2, 3, 4, 8 and the subgroup {1, 3, 4} of 6), each rank's result
// compared bit for bit with a serial reference computed on the test thread. Inputs reduce
// exactly (tests/comm/reference.h), so the reference's order does not matter and equality
// with it also proves all ranks hold identical bits. The pool must get every buffer back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/comm.h"
#include "comm/buffer_pool.h"
#include "rank_threads.h"
#include "reference.h"

namespace sf::comm {
namespace {

using commtest::concat0;
using commtest::make_input;
using commtest::reduce_all;
using commtest::rows_copy;
using namespace std::chrono_literals;

enum class Coll { kAllReduceSum, kAllReduceProd, kAllReduceMax, kAllReduceMin, kAllReduceRing, kAllReduceRecDbl,
                  kAllGather, kReduceScatterSum, kReduceScatterMin, kBroadcast, kAllToAll };

const char* coll_name(Coll c) {
  static const char* kNames[] = {"AllReduceSum", "AllReduceProd", "AllReduceMax", "AllReduceMin", "AllReduceRing",
                                 "AllReduceRecDbl", "AllGather", "ReduceScatterSum", "ReduceScatterMin", "Broadcast",
                                 "AlltoAll"};
  return kNames[static_cast<int>(c)];
}

ReduceOp op_of(Coll c) {
  switch (c) {
    case Coll::kAllReduceProd: return ReduceOp::kProd;
    case Coll::kAllReduceMax: return ReduceOp::kMax;
    case Coll::kAllReduceMin:
    case Coll::kReduceScatterMin: return ReduceOp::kMin;
    default: return ReduceOp::kSum;
  }
}

struct GroupCase {
  int world;
  std::vector<int> ranks;
};

using Param = std::tuple<Coll, DType, int64_t, GroupCase>;

class Conformance : public ::testing::TestWithParam<Param> {};

TEST_P(Conformance, MatchesSerialReferenceOnEveryRank) {
  const auto& [coll, dtype, count, gc] = GetParam();
  const int n = static_cast<int>(gc.ranks.size());
  const ReduceOp op = op_of(coll);
  const int64_t k = (count + n - 1) / n;  // per-rank rows where the total is split
  Shape shape{count};
  if (coll == Coll::kAllGather) shape = {k};
  if (coll == Coll::kReduceScatterSum || coll == Coll::kReduceScatterMin || coll == Coll::kAllToAll) shape = {n * k};
  std::vector<Tensor> inputs;
  for (int g = 0; g < n; ++g) inputs.push_back(make_input(shape, dtype, op, gc.ranks[g], 42));

  // Serial reference: expected[g] is group rank g's output.
  std::vector<Tensor> expected(n);
  const int root = n - 1;
  for (int g = 0; g < n; ++g) {
    switch (coll) {
      case Coll::kAllGather: expected[g] = concat0(inputs); break;
      case Coll::kReduceScatterSum:
      case Coll::kReduceScatterMin: expected[g] = rows_copy(reduce_all(inputs, op), g * k, (g + 1) * k); break;
      case Coll::kBroadcast: expected[g] = inputs[root].clone(); break;
      case Coll::kAllToAll: {
        std::vector<Tensor> parts;
        for (int src = 0; src < n; ++src) parts.push_back(rows_copy(inputs[src], g * k, (g + 1) * k));
        expected[g] = concat0(parts);
        break;
      }
      default: expected[g] = reduce_all(inputs, op);
    }
  }

  auto world = make_inproc_world(gc.world);
  std::vector<Tensor> outputs(n);
  const size_t outstanding = BufferPool::global().outstanding();
  commtest::run_ranks(gc.world, [&](int w) {
    int g = -1;
    for (int i = 0; i < n; ++i)
      if (gc.ranks[i] == w) g = i;
    if (g < 0) return;  // not a member of the subgroup
    Group group = static_cast<int>(gc.ranks.size()) == gc.world ? world_group(world[w])
                                                                : create_group(world[w], "sub", gc.ranks);
    ASSERT_EQ(group.rank(), g);
    const auto timeout = 20s;
    switch (coll) {
      case Coll::kAllGather: outputs[g] = all_gather(inputs[g], {.group = group, .timeout = timeout}); break;
      case Coll::kReduceScatterSum:
      case Coll::kReduceScatterMin:
        outputs[g] = reduce_scatter(inputs[g], {.group = group, .op = op, .timeout = timeout});
        break;
      case Coll::kBroadcast: outputs[g] = broadcast(inputs[g], {.group = group, .root = root, .timeout = timeout}); break;
      case Coll::kAllToAll:
        outputs[g] = all_to_all(inputs[g], {.group = group, .split_count = n, .timeout = timeout});
        break;
      default: {
        Algorithm a = coll == Coll::kAllReduceRing     ? Algorithm::kRing
                      : coll == Coll::kAllReduceRecDbl ? Algorithm::kRecursiveDoubling
                                                       : Algorithm::kAuto;
        outputs[g] = all_reduce(inputs[g], {.group = group, .op = op, .algorithm = a, .timeout = timeout});
      }
    }
  });
  for (int g = 0; g < n; ++g) {
    ASSERT_TRUE(outputs[g].defined()) << "group rank " << g;
    EXPECT_EQ(outputs[g].shape(), expected[g].shape()) << "group rank " << g;
    ASSERT_TRUE(bitwise_equal(outputs[g], expected[g])) << "group rank " << g << " differs from the reference";
    EXPECT_FALSE(outputs[g].numel() > 0 && outputs[g].shares_storage(inputs[g])) << "output aliases the input";
  }
  EXPECT_EQ(BufferPool::global().outstanding(), outstanding) << "message buffers were not all released";
}

std::vector<GroupCase> group_cases() {
  std::vector<GroupCase> out;
  for (int n : {1, 2, 3, 4, 8}) {
    GroupCase g{n, {}};
    for (int r = 0; r < n; ++r) g.ranks.push_back(r);
    out.push_back(g);
  }
  out.push_back({6, {1, 3, 4}});
  return out;
}

std::string param_name(const Param& p) {
  const auto& [coll, dtype, count, gc] = p;
  std::string name = std::string(coll_name(coll)) + "_" + std::string(dtype_name(dtype)) + "_n" +
                     std::to_string(count) + "_g" + std::to_string(gc.ranks.size());
  if (static_cast<int>(gc.ranks.size()) != gc.world) name += "of" + std::to_string(gc.world);
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    Inproc, Conformance,
    ::testing::Combine(::testing::Values(Coll::kAllReduceSum, Coll::kAllReduceProd, Coll::kAllReduceMax,
                                         Coll::kAllReduceMin, Coll::kAllReduceRing, Coll::kAllReduceRecDbl,
                                         Coll::kAllGather, Coll::kReduceScatterSum, Coll::kReduceScatterMin,
                                         Coll::kBroadcast, Coll::kAllToAll),
                       ::testing::Values(DType::kF32, DType::kI32),
                       ::testing::Values(int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1000003}),
                       ::testing::ValuesIn(group_cases())),
    [](const ::testing::TestParamInfo<Param>& info) { return param_name(info.param); });

}  // namespace
}  // namespace sf::comm
