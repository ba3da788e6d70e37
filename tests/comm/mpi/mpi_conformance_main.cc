// Conformance of the mpi transport, one process per rank: run under `mpirun -np N` (ctest
// does N = 2, 3, 4). Every rank runs every collective (AllReduce sum/max with the ring and
// recursive doubling, AllReduce prod/min, AllGather, ReduceScatter, Broadcast, AlltoAll,
// Send/Receive, Barrier) x f32/i32 x element counts 0, 1, 7, 1000, 1000003, on the world group
// and on the subgroup of ranks N-1 .. 1 (reversed, rank 0 left out), and compares its own
// result bit for bit with a serial reference it computes itself: inputs depend only on
// (world rank, index) (tests/comm/reference.h), so any rank can build every rank's input.
// Exits non-zero naming the case and rank on the first mismatch; every message buffer must be
// back in the pool at the end.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/comm.h>
#include <shardflow/comm/mpi/transport.h>
#include "mpi/mpi_test_main.h"
#include "reference.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
using commtest::concat0;
using commtest::make_input;
using commtest::reduce_all;
using commtest::rows_copy;

constexpr auto kTimeout = 60s;

enum class Coll { kSumRing, kSumRecDbl, kMaxRing, kMaxRecDbl, kProd, kMin, kAllGather, kReduceScatter, kBroadcast,
                  kAllToAll, kSendRecv };
constexpr const char* kNames[] = {"AllReduceSumRing", "AllReduceSumRecDbl", "AllReduceMaxRing", "AllReduceMaxRecDbl",
                                  "AllReduceProd", "AllReduceMin", "AllGather", "ReduceScatterSum", "Broadcast",
                                  "AlltoAll", "SendReceive"};

ReduceOp op_of(Coll c) {
  switch (c) {
    case Coll::kMaxRing:
    case Coll::kMaxRecDbl: return ReduceOp::kMax;
    case Coll::kProd: return ReduceOp::kProd;
    case Coll::kMin: return ReduceOp::kMin;
    default: return ReduceOp::kSum;
  }
}

// Runs `c` on this rank of `group` (whose world ranks are `members`) and checks the result.
void check(Coll c, DType dtype, int64_t count, const Group& group, const std::vector<int>& members, uint64_t salt) {
  const int n = group.size(), g = group.rank();
  const ReduceOp op = op_of(c);
  const int64_t k = (count + n - 1) / n;
  Shape shape{count};
  if (c == Coll::kAllGather) shape = {k};
  if (c == Coll::kReduceScatter || c == Coll::kAllToAll) shape = {n * k};
  std::vector<Tensor> in;
  for (int w : members) in.push_back(make_input(shape, dtype, op, w, salt));
  const int root = n - 1;
  Tensor out, want;
  switch (c) {
    case Coll::kAllGather:
      out = all_gather(in[g], {.group = group, .timeout = kTimeout});
      want = concat0(in);
      break;
    case Coll::kReduceScatter:
      out = reduce_scatter(in[g], {.group = group, .op = op, .timeout = kTimeout});
      want = rows_copy(reduce_all(in, op), g * k, (g + 1) * k);
      break;
    case Coll::kBroadcast:
      out = broadcast(in[g], {.group = group, .root = root, .timeout = kTimeout});
      want = in[root];
      break;
    case Coll::kAllToAll: {
      out = all_to_all(in[g], {.group = group, .split_count = n, .timeout = kTimeout});
      std::vector<Tensor> parts;
      for (int src = 0; src < n; ++src) parts.push_back(rows_copy(in[src], g * k, (g + 1) * k));
      want = concat0(parts);
      break;
    }
    case Coll::kSendRecv: {  // a ring: send to the next group rank, receive from the previous
      const int next = (g + 1) % n, prev = (g + n - 1) % n;
      send(in[g], {.group = group, .dest = next, .sr_tag = 7});
      out = receive({.group = group, .src = prev, .sr_tag = 7, .shape = shape, .dtype = dtype, .timeout = kTimeout});
      want = in[prev];
      break;
    }
    default: {
      const bool ring = c == Coll::kSumRing || c == Coll::kMaxRing;
      const bool recdbl = c == Coll::kSumRecDbl || c == Coll::kMaxRecDbl;
      const Algorithm a = ring ? Algorithm::kRing : recdbl ? Algorithm::kRecursiveDoubling : Algorithm::kAuto;
      out = all_reduce(in[g], {.group = group, .op = op, .algorithm = a, .timeout = kTimeout});
      want = reduce_all(in, op);
    }
  }
  if (out.shape() != want.shape() || !bitwise_equal(out, want))
    throw std::runtime_error(fmt::format("{} {} n={} group '{}' (size {}): group rank {} got {}, expected {}",
                                         kNames[static_cast<int>(c)], dtype_name(dtype), count, group.name(), n, g,
                                         out.describe(), want.describe()));
}

int run_checks(const std::shared_ptr<Transport>& world) {
  const int me = world->rank(), n = world->size();
  std::vector<int> all, sub;
  for (int r = 0; r < n; ++r) all.push_back(r);
  for (int r = n - 1; r >= 1; --r) sub.push_back(r);
  Group wg = world_group(world);
  Group sg = me == 0 || sub.empty() ? Group() : create_group(world, "sub", sub);
  int cases = 0;
  uint64_t salt = 1;
  for (int ci = 0; ci <= static_cast<int>(Coll::kSendRecv); ++ci)
    for (DType dtype : {DType::kF32, DType::kI32})
      for (int64_t count : {0, 1, 7, 1000, 1000003}) {
        const Coll c = static_cast<Coll>(ci);
        // Send/Receive refuses a rank sending to itself, which a 1-rank ring would.
        const bool self_send = c == Coll::kSendRecv;
        ++salt;
        if (!(self_send && n == 1)) check(c, dtype, count, wg, all, salt);
        if (sg.defined() && !(self_send && sg.size() == 1)) check(c, dtype, count, sg, sub, salt);
        ++cases;
      }
  barrier({.group = wg, .timeout = kTimeout});
  barrier({.group = wg, .algorithm = Algorithm::kDissemination, .timeout = kTimeout});
  // Every message has been received now (peers may already be sending when a rank starts, so
  // there is no earlier baseline); sends release their buffers once the bytes have left.
  for (int i = 0; i < 200 && BufferPool::global().outstanding() != 0; ++i) std::this_thread::sleep_for(10ms);
  if (BufferPool::global().outstanding() != 0)
    throw std::runtime_error(fmt::format("{} message buffers were not released", BufferPool::global().outstanding()));
  std::printf("mpi conformance: rank %d of %d: %d cases x %s passed\n", me, n, cases,
              sg.defined() ? "world + subgroup" : "world");
  return 0;
}

}  // namespace
}  // namespace sf::comm

int main() { return sf::commtest::run_mpi_test("mpi conformance", sf::comm::run_checks); }
