// Conformance suite, run on every transport: every collective x dtype (f32, i32) x element
// count (0, 1, 7, 1000, 1000003) x group (sizes 1, 2, 3, 4, 8 and the subgroup {1, 3, 4} of
// 6), each rank's result compared bit for bit with a serial reference computed on the test
// thread. Inputs reduce exactly (tests/comm/reference.h), so the reference's order does not
// matter and equality with it also proves all ranks hold identical bits. The pool must get
// every buffer back.
//
// Transports: inproc runs one case per test on a fresh world. zmq (ipc:// and tcp:// on real
// sockets) runs the same cases, but one test per (collective, dtype, group) goes through every
// count on one world, because its cost is the world's sockets and ctest's process per test,
// not the cases; ipc and tcp both run the whole matrix. The mpi transport runs this matrix
// under mpirun -np 1, 2, 3, 4, 8 (tests/comm/mpi/mpi_conformance_main.cc).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include <shardflow/comm/comm.h>
#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/zmq/transport.h>
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

// Readable parameters in test listings.
void PrintTo(Coll c, std::ostream* os) { *os << coll_name(c); }
void PrintTo(const GroupCase& g, std::ostream* os) {
  *os << "ranks {";
  for (size_t i = 0; i < g.ranks.size(); ++i) *os << (i ? "," : "") << g.ranks[i];
  *os << "} of " << g.world;
}

const int64_t kCounts[] = {0, 1, 7, 1000, 1000003};

// Each world rank's handle on the case's group (undefined for ranks outside a subgroup).
std::vector<Group> groups_of(const std::vector<std::shared_ptr<Transport>>& world, const GroupCase& gc) {
  std::vector<Group> groups(world.size());
  const bool whole = static_cast<int>(gc.ranks.size()) == gc.world;
  for (int r : gc.ranks) groups[r] = whole ? world_group(world[r]) : create_group(world[r], "sub", gc.ranks);
  return groups;
}

// Waits up to 5 s for the pool's outstanding count to come back to `want`: a copying transport
// hands a sent buffer back on its own I/O thread once the bytes have left, which may be just
// after the receiver has returned.
bool pool_settles(size_t want) {
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (BufferPool::global().outstanding() != want && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(1ms);
  return BufferPool::global().outstanding() == want;
}

// Runs one case on every member of `groups` (world rank r's handle at r) and checks each
// result against the serial reference.
void check_case(const std::vector<Group>& groups, Coll coll, DType dtype, int64_t count, const GroupCase& gc) {
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

  std::vector<Tensor> outputs(n);
  const size_t outstanding = BufferPool::global().outstanding();
  commtest::run_ranks(gc.world, [&](int w) {
    const Group& group = groups[w];
    if (!group.defined()) return;  // not a member of the subgroup
    const int g = group.rank();
    ASSERT_EQ(gc.ranks[g], w);
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
  EXPECT_TRUE(pool_settles(outstanding)) << "message buffers were not all released";
}

using Param = std::tuple<Coll, DType, int64_t, GroupCase>;

class Conformance : public ::testing::TestWithParam<Param> {};

TEST_P(Conformance, MatchesSerialReferenceOnEveryRank) {
  const auto& [coll, dtype, count, gc] = GetParam();
  auto world = make_inproc_world(gc.world);
  check_case(groups_of(world, gc), coll, dtype, count, gc);
}

using ZmqParam = std::tuple<ZmqScheme, Coll, DType, GroupCase>;

class ZmqConformance : public ::testing::TestWithParam<ZmqParam> {};

TEST_P(ZmqConformance, MatchesSerialReferenceOnEveryRankForEveryCount) {
  const auto& [scheme, coll, dtype, gc] = GetParam();
  ZmqOptions options;
  options.scheme = scheme;
  auto world = make_zmq_world(gc.world, options);
  // One handle per rank for all counts: sequence numbers go on, so no case reuses a tag.
  const std::vector<Group> groups = groups_of(world, gc);
  for (int64_t count : kCounts) {
    SCOPED_TRACE("count " + std::to_string(count));
    check_case(groups, coll, dtype, count, gc);
    if (HasFatalFailure()) return;
  }
  for (int r : gc.ranks) {
    const ZmqStats st = std::dynamic_pointer_cast<zmq::ZmqTransport>(world[r])->stats();
    EXPECT_EQ(st.malformed() + st.unauthenticated + st.refused_peers + st.peers_lost, 0u) << "rank " << r;
  }
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

std::string group_name(const GroupCase& gc) {
  std::string name = fmt::format("g{}", gc.ranks.size());
  if (static_cast<int>(gc.ranks.size()) != gc.world) name += fmt::format("of{}", gc.world);
  return name;
}

std::string param_name(const Param& p) {
  const auto& [coll, dtype, count, gc] = p;
  return std::string(coll_name(coll)) + "_" + std::string(dtype_name(dtype)) + "_n" + std::to_string(count) + "_" +
         group_name(gc);
}

std::string zmq_param_name(const ZmqParam& p) {
  const auto& [scheme, coll, dtype, gc] = p;
  return std::string(coll_name(coll)) + "_" + std::string(dtype_name(dtype)) + "_" + group_name(gc);
}

const auto kColls = ::testing::Values(Coll::kAllReduceSum, Coll::kAllReduceProd, Coll::kAllReduceMax,
                                      Coll::kAllReduceMin, Coll::kAllReduceRing, Coll::kAllReduceRecDbl,
                                      Coll::kAllGather, Coll::kReduceScatterSum, Coll::kReduceScatterMin,
                                      Coll::kBroadcast, Coll::kAllToAll);

INSTANTIATE_TEST_SUITE_P(Inproc, Conformance,
                         ::testing::Combine(kColls, ::testing::Values(DType::kF32, DType::kI32),
                                            ::testing::ValuesIn(kCounts), ::testing::ValuesIn(group_cases())),
                         [](const ::testing::TestParamInfo<Param>& info) { return param_name(info.param); });

INSTANTIATE_TEST_SUITE_P(ZmqIpc, ZmqConformance,
                         ::testing::Combine(::testing::Values(ZmqScheme::kIpc), kColls,
                                            ::testing::Values(DType::kF32, DType::kI32),
                                            ::testing::ValuesIn(group_cases())),
                         [](const ::testing::TestParamInfo<ZmqParam>& info) { return zmq_param_name(info.param); });

INSTANTIATE_TEST_SUITE_P(ZmqTcp, ZmqConformance,
                         ::testing::Combine(::testing::Values(ZmqScheme::kTcp), kColls,
                                            ::testing::Values(DType::kF32, DType::kI32),
                                            ::testing::ValuesIn(group_cases())),
                         [](const ::testing::TestParamInfo<ZmqParam>& info) { return zmq_param_name(info.param); });

}  // namespace
}  // namespace sf::comm
