// The mpi backend's native collectives (MPI's own, comm/mpi/collectives.h), run under
// `mpirun -np N` (ctest: N = 2, 3, 4). Checks, on every rank:
//  * the table picks them for every data collective on this transport;
//  * f32 AllReduce and ReduceScatter of random (inexactly summed) values hold the same bits on
//    every rank and from run to run, and are close to the serial sum;
//  * async and sync calls interleaved on one group, in program order, get the right results;
//  * two groups whose communicators the ranks first ask for in opposite orders (even ranks one
//    way, odd ranks the other) are both created and used without deadlock;
//  * AlltoAll along other dims than 0 (packed and unpacked around MPI_Ialltoall), Broadcast
//    from a root other than 0;
//  * an AllReduce and a ReduceScatter large enough to run in chunks, with another collective
//    queued behind them.
// Exits non-zero naming the check and rank on the first deviation.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <shardflow/comm/comm.h>
#include <shardflow/comm/mpi/collectives.h>
#include <shardflow/comm/mpi/transport.h>
#include <shardflow/core/rng.h>
#include "mpi/mpi_test_main.h"
#include "reference.h"

namespace sf::comm {
namespace {

using namespace std::chrono_literals;
constexpr auto kTimeout = 60s;

void fail(const std::string& why) { throw std::runtime_error(why); }

Tensor random_input(int64_t count, int rank, uint64_t seed) {
  Tensor x({count});
  fill_random(x, Distribution::kNormal, 0.0f, 1.0f, seed, static_cast<uint64_t>(rank));
  return x;
}

// True if every rank of `g` holds the same bits in `t` (all-gathers them).
bool same_everywhere(const Tensor& t, const Group& g) {
  Tensor all = all_gather(t.view({1, t.numel()}), {.group = g, .timeout = kTimeout});
  for (int q = 0; q < g.size(); ++q)
    if (std::memcmp(all.rows(q, q + 1).raw(), t.raw(), t.nbytes()) != 0) return false;
  return true;
}

void check_table(const std::shared_ptr<Transport>& world) {
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kBroadcast, Collective::kAllToAll}) {
    const TransportCaps caps = transport_caps(*world, c, 1 << 20);
    const Algorithm want = c == Collective::kReduceScatter ? Algorithm::kRing : Algorithm::kNative;
    if (!caps.native || choose_algorithm(c, 4 << 20, world->size(), caps) != want)
      fail(fmt::format("the table does not pick {} {} of 4 MiB on the mpi transport", algorithm_name(want),
                       collective_name(c)));
  }
  // Small ReduceScatters stay native.
  const TransportCaps small = transport_caps(*world, Collective::kReduceScatter, 1024);
  if (choose_algorithm(Collective::kReduceScatter, 4096, world->size(), small) != Algorithm::kNative)
    fail("the table does not pick native ReduceScatter of 4 KiB on the mpi transport");
}

void check_identical_bits(const Group& g) {
  const int n = g.size(), me = g.rank();
  const int64_t count = 1000003 / n * n;
  const Tensor x = random_input(count, me, 5);
  const Tensor a = all_reduce(x, {.group = g, .timeout = kTimeout});
  const Tensor b = all_reduce(x, {.group = g, .timeout = kTimeout});
  if (!bitwise_equal(a, b)) fail("AllReduce: two runs gave different bits");
  if (!same_everywhere(a, g)) fail("AllReduce: ranks hold different bits");
  const Tensor s = reduce_scatter(x, {.group = g, .timeout = kTimeout});
  if (!bitwise_equal(s, reduce_scatter(x, {.group = g, .timeout = kTimeout})))
    fail("ReduceScatter: two runs gave different bits");
  std::vector<Tensor> inputs;
  for (int q = 0; q < n; ++q) inputs.push_back(random_input(count, q, 5));
  for (int64_t i = 0; i < count; i += 9973) {
    double ref = 0;
    for (int q = 0; q < n; ++q) ref += inputs[q].f32()[i];
    if (std::abs(a.f32()[i] - ref) > 1e-4) fail(fmt::format("AllReduce element {}: {} vs serial {}", i, a.f32()[i], ref));
  }
}

void check_async_and_sync(const Group& g, const std::vector<int>& members) {
  const int n = g.size(), me = g.rank();
  std::vector<Tensor> in;
  for (int w : members) in.push_back(commtest::make_input({4000}, DType::kF32, ReduceOp::kSum, w, 77));
  Work first = all_reduce_async(in[me], {.group = g, .timeout = kTimeout});
  Tensor second = all_gather(in[me], {.group = g, .timeout = kTimeout});
  Work third = broadcast_async(in[me], {.group = g, .root = n - 1, .timeout = kTimeout});
  if (!bitwise_equal(first.get(), commtest::reduce_all(in, ReduceOp::kSum))) fail("async AllReduce");
  if (!bitwise_equal(second, commtest::concat0(in))) fail("sync AllGather between two async calls");
  if (!bitwise_equal(third.get(), in[n - 1])) fail("async Broadcast");
}

void check_opposite_creation_orders(const std::shared_ptr<Transport>& world) {
  const int n = world->size(), me = world->rank();
  std::vector<int> up, down;
  for (int r = 0; r < n; ++r) up.push_back(r);
  for (int r = n - 1; r >= 0; --r) down.push_back(r);
  Group g1 = create_group(world, "native_up", up), g2 = create_group(world, "native_down", down);
  const Tensor x = Tensor::full({1000}, static_cast<float>(me + 1));
  Work w1, w2;
  if (me % 2 == 0) {
    w1 = all_reduce_async(x, {.group = g1, .timeout = kTimeout});
    w2 = all_reduce_async(x, {.group = g2, .timeout = kTimeout});
  } else {
    w2 = all_reduce_async(x, {.group = g2, .timeout = kTimeout});
    w1 = all_reduce_async(x, {.group = g1, .timeout = kTimeout});
  }
  const float want = static_cast<float>(n * (n + 1) / 2);
  if (w1.get().f32()[999] != want || w2.get().f32()[0] != want) fail("groups first used in opposite orders");
}

void check_other_dims_and_roots(const Group& g, const std::vector<int>& members) {
  const int n = g.size(), me = g.rank();
  std::vector<Tensor> in;
  for (int w : members) in.push_back(commtest::make_input({3, 2 * n, 5}, DType::kI32, ReduceOp::kSum, w, 91));
  // split_dim 1, concat_dim 2: block j is in[:, 2j:2j+2, :]; the result concatenates the
  // blocks from every rank along the last dim.
  Tensor out = all_to_all(in[me], {.group = g, .split_count = n, .split_dim = 1, .concat_dim = 2, .timeout = kTimeout});
  if (out.shape() != Shape{3, 2, 5 * n}) fail("AlltoAll: shape " + out.describe());
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int q = 0; q < n; ++q)
        for (int64_t c = 0; c < 5; ++c) {
          const int32_t got = out.i32()[(a * 2 + b) * 5 * n + q * 5 + c];
          const int32_t want = in[q].i32()[(a * 2 * n + me * 2 + b) * 5 + c];
          if (got != want) fail(fmt::format("AlltoAll element ({},{},{}) from rank {}", a, b, c, q));
        }
  const int root = n / 2;
  if (!bitwise_equal(broadcast(in[me], {.group = g, .root = root, .timeout = kTimeout}), in[root]))
    fail("Broadcast from root " + std::to_string(root));
}

void check_chunked(const Group& g, const std::vector<int>& members) {
  const int me = g.rank();
  const int64_t count = 2 * mpi::kAllReduceChunkBytes / 4 + 7;  // two whole chunks and a bit
  std::vector<Tensor> in, small;
  for (int w : members) {
    in.push_back(commtest::make_input({count}, DType::kI32, ReduceOp::kSum, w, 13));
    small.push_back(commtest::make_input({5}, DType::kF32, ReduceOp::kSum, w, 14));
  }
  Work big = all_reduce_async(in[me], {.group = g, .timeout = kTimeout});
  Work after = all_gather_async(small[me], {.group = g, .timeout = kTimeout});
  const Tensor sum = commtest::reduce_all(in, ReduceOp::kSum);
  if (!bitwise_equal(big.get(), sum)) fail("chunked AllReduce");
  if (!bitwise_equal(after.get(), commtest::concat0(small))) fail("AllGather queued behind a chunked AllReduce");
  // ReduceScatter: blocks of m elements, each cut into slices of the chunk size (2 and a bit).
  const int n = g.size();
  const int64_t m = 2 * (mpi::kReduceScatterChunkBytes / 4 / n) + 3;
  std::vector<Tensor> rs_in;
  for (int w : members) rs_in.push_back(commtest::make_input({n * m}, DType::kI32, ReduceOp::kMax, w, 15));
  Work rs = reduce_scatter_async(rs_in[me], {.group = g, .op = ReduceOp::kMax, .timeout = kTimeout});
  Work after_rs = all_gather_async(small[me], {.group = g, .timeout = kTimeout});
  if (!bitwise_equal(rs.get(), commtest::rows_copy(commtest::reduce_all(rs_in, ReduceOp::kMax), me * m, (me + 1) * m)))
    fail("chunked ReduceScatter");
  if (!bitwise_equal(after_rs.get(), commtest::concat0(small))) fail("AllGather queued behind a chunked ReduceScatter");
}

int run_checks(const std::shared_ptr<Transport>& world) {
  const int n = world->size();
  std::vector<int> all;
  for (int r = 0; r < n; ++r) all.push_back(r);
  Group wg = world_group(world);
  check_table(world);
  check_identical_bits(wg);
  check_async_and_sync(wg, all);
  check_opposite_creation_orders(world);
  check_other_dims_and_roots(wg, all);
  check_chunked(wg, all);
  std::printf("mpi native: rank %d of %d passed\n", world->rank(), n);
  return 0;
}

}  // namespace
}  // namespace sf::comm

int main() { return sf::commtest::run_mpi_test("mpi native", sf::comm::run_checks); }
