// Every collective op in a graph run by N virtual ranks (one Runtime each): its forward
// equals the direct comm call on the same inputs, bit for bit, and its gradient equals the
// central difference of the global loss L = sum over ranks r of <op(x)_r, c_r>, taken through
// the direct comm calls, element by element of every rank's x (Broadcast: MindSpore's
// pass-through rule instead, checked exactly).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <vector>

#include <shardflow/comm/comm.h>
#include <shardflow/core/rng.h>
#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/builder.h>
#include <shardflow/ops/collective_builder.h>
#include "tests/actors/collective_world.h"

namespace sf {
namespace {

using actortest::run_world;
using actortest::with_collectives;

Tensor uniform(const Shape& s, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(s);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = lo + (hi - lo) * uniform_at(seed, 1, static_cast<uint64_t>(i));
  return t;
}

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += static_cast<double>(a.f32()[i]) * b.f32()[i];
  return s;
}

enum class GradRule { kFiniteDifference, kPassThrough, kNone };

struct OpCase {
  int ranks = 3;
  Shape x_shape;
  DType dtype = DType::kF32;
  std::function<Tensor(int rank)> make_x;  // default: uniform in [-1, 1)
  std::function<std::vector<Value>(GraphBuilder&, CollectiveBuilder&, Value x, int rank)> graph;
  std::function<std::vector<Tensor>(const comm::Group&, const Tensor& x, int rank)> direct;
  GradRule grad = GradRule::kFiniteDifference;
};

constexpr float kEps = 1.0f / 64;

void check_op(const OpCase& oc) {
  const int n = oc.ranks;
  const int64_t numel_x = numel(oc.x_shape);
  std::vector<Tensor> xs(n), dxs(n);
  std::vector<std::vector<Tensor>> graph_out(n), direct_out(n), cs(n);
  // fd[s][i][k][r]: rank r's share of L with element i of rank s's x moved by -/+ eps (k = 0/1).
  std::vector<std::vector<std::array<std::vector<double>, 2>>> fd(
      n, std::vector<std::array<std::vector<double>, 2>>(numel_x, {std::vector<double>(n), std::vector<double>(n)}));
  std::vector<std::vector<double>> step(n, std::vector<double>(numel_x));
  const bool differentiate = oc.grad != GradRule::kNone;

  run_world(n, [&](int r, const CollectiveContext& ctx) {
    Graph g;
    GraphBuilder gb(g);
    CollectiveBuilder cb(gb, group_ref(ctx.groups.at("world")));
    const Value x = gb.input("x", oc.x_shape, oc.dtype);
    const std::vector<Value> outs = oc.graph(gb, cb, x, r);
    std::vector<int> fetches;
    std::vector<Value> c_inputs;
    Value loss;
    for (size_t j = 0; j < outs.size(); ++j) {
      fetches.push_back(outs[j].id);
      if (!differentiate) continue;
      c_inputs.push_back(gb.input(fmt::format("c{}", j), gb.shape(outs[j])));
      const Value term = gb.reduce_sum(gb.mul(outs[j], c_inputs.back()));
      loss = loss.valid() ? gb.add(loss, term) : term;
    }
    if (differentiate) fetches.push_back(gradients(g, loss.id, {x.id})[0]);

    xs[r] = oc.make_x ? oc.make_x(r) : uniform(oc.x_shape, 100 + r);
    Runtime rt(g, fetches, with_collectives(ctx));
    Runtime::Feeds feeds{{x.id, xs[r]}};
    for (size_t j = 0; j < c_inputs.size(); ++j) {
      cs[r].push_back(uniform(gb.shape(outs[j]), 200 + 10 * r + j, 0.5f, 1.5f));
      feeds.push_back({c_inputs[j].id, cs[r][j]});
    }
    const std::vector<Tensor>& got = rt.run(feeds);
    for (size_t j = 0; j < outs.size(); ++j) graph_out[r].push_back(got[j].clone());
    if (differentiate) dxs[r] = got.back().clone();

    // The same op by direct calls on the same group, after the runtime's (same program order).
    const comm::Group& world = ctx.groups.at("world");
    direct_out[r] = oc.direct(world, xs[r], r);
    if (oc.grad != GradRule::kFiniteDifference) return;
    for (int s = 0; s < n; ++s)
      for (int64_t i = 0; i < numel_x; ++i)
        for (int k = 0; k < 2; ++k) {
          Tensor moved = xs[r].clone();
          if (r == s) {
            moved.f32()[i] += k == 0 ? -kEps : kEps;
            if (k == 1) step[s][i] = static_cast<double>(moved.f32()[i]) - (xs[r].f32()[i] - kEps);
          }
          const std::vector<Tensor> y = oc.direct(world, moved, r);
          double share = 0;
          for (size_t j = 0; j < y.size(); ++j) share += dot(y[j], cs[r][j]);
          fd[s][i][k][r] = share;
        }
  });

  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(graph_out[r].size(), direct_out[r].size());
    for (size_t j = 0; j < graph_out[r].size(); ++j)
      EXPECT_TRUE(bitwise_equal(graph_out[r][j], direct_out[r][j]))
          << "rank " << r << " output " << j << ": graph " << graph_out[r][j].describe() << " vs direct "
          << direct_out[r][j].describe();
  }
  if (oc.grad == GradRule::kPassThrough) {
    for (int r = 0; r < n; ++r) EXPECT_TRUE(bitwise_equal(dxs[r], cs[r][0])) << "rank " << r;
  }
  if (oc.grad != GradRule::kFiniteDifference) return;
  for (int s = 0; s < n; ++s) {
    ASSERT_EQ(dxs[s].shape(), oc.x_shape);
    for (int64_t i = 0; i < numel_x; ++i) {
      double hi = 0, lo = 0;
      for (int r = 0; r < n; ++r) {
        lo += fd[s][i][0][r];
        hi += fd[s][i][1][r];
      }
      const double want = (hi - lo) / step[s][i], got = dxs[s].f32()[i];
      ASSERT_NEAR(got, want, 2e-3 + 2e-3 * std::fabs(want)) << "d L / d x of rank " << s << ", element " << i;
    }
  }
}

std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

// AllReduce over 3 ranks with each op; values chosen so that max and min have no ties and
// prod stays away from zero.
OpCase all_reduce_case(const std::string& op) {
  OpCase c;
  c.x_shape = {2, 3};
  c.make_x = [op](int r) {
    Tensor t({2, 3});
    for (int64_t i = 0; i < 6; ++i)
      t.f32()[i] = op == "prod" ? 0.6f + 0.1f * static_cast<float>((i * 5 + r * 3) % 7)
                                : 0.1f * static_cast<float>((i * 5 + r * 3) % 13) - 0.6f;
    return t;
  };
  c.graph = [op](GraphBuilder&, CollectiveBuilder& cb, Value x, int) { return std::vector<Value>{cb.all_reduce(x, op)}; };
  const comm::ReduceOp rop = op == "sum"    ? comm::ReduceOp::kSum
                             : op == "prod" ? comm::ReduceOp::kProd
                             : op == "max"  ? comm::ReduceOp::kMax
                                            : comm::ReduceOp::kMin;
  c.direct = [rop](const comm::Group& g, const Tensor& x, int) {
    comm::AllReduceOptions o;
    o.group = g;
    o.op = rop;
    return one(comm::all_reduce(x, o));
  };
  return c;
}

TEST(CollectiveGraph, AllReduceSum) { check_op(all_reduce_case("sum")); }
TEST(CollectiveGraph, AllReduceProd) { check_op(all_reduce_case("prod")); }
TEST(CollectiveGraph, AllReduceMax) { check_op(all_reduce_case("max")); }
TEST(CollectiveGraph, AllReduceMin) { check_op(all_reduce_case("min")); }

TEST(CollectiveGraph, AllReduceI32) {
  OpCase c;
  c.x_shape = {5};
  c.dtype = DType::kI32;
  c.grad = GradRule::kNone;
  c.make_x = [](int r) { return Tensor::from_vector({5}, std::vector<int32_t>{r, 2 * r, -r, 7, r * r}); };
  c.graph = [](GraphBuilder&, CollectiveBuilder& cb, Value x, int) { return std::vector<Value>{cb.all_reduce(x, "max")}; };
  c.direct = [](const comm::Group& g, const Tensor& x, int) {
    comm::AllReduceOptions o;
    o.group = g;
    o.op = comm::ReduceOp::kMax;
    return one(comm::all_reduce(x, o));
  };
  check_op(c);
}

TEST(CollectiveGraph, AllGather) {
  OpCase c;
  c.x_shape = {2, 2};
  c.graph = [](GraphBuilder&, CollectiveBuilder& cb, Value x, int) { return std::vector<Value>{cb.all_gather(x)}; };
  c.direct = [](const comm::Group& g, const Tensor& x, int) {
    comm::AllGatherOptions o;
    o.group = g;
    return one(comm::all_gather(x, o));
  };
  check_op(c);
}

TEST(CollectiveGraph, ReduceScatter) {
  OpCase c;
  c.x_shape = {3, 2};
  c.graph = [](GraphBuilder&, CollectiveBuilder& cb, Value x, int) {
    return std::vector<Value>{cb.reduce_scatter(x)};
  };
  c.direct = [](const comm::Group& g, const Tensor& x, int) {
    comm::ReduceScatterOptions o;
    o.group = g;
    return one(comm::reduce_scatter(x, o));
  };
  check_op(c);
}

TEST(CollectiveGraph, BroadcastWithMindSporesPassThroughGradient) {
  OpCase c;
  c.x_shape = {2, 3};
  c.grad = GradRule::kPassThrough;
  c.graph = [](GraphBuilder&, CollectiveBuilder& cb, Value x, int) { return std::vector<Value>{cb.broadcast(x, 1)}; };
  c.direct = [](const comm::Group& g, const Tensor& x, int) {
    comm::BroadcastOptions o;
    o.group = g;
    o.root = 1;
    return one(comm::broadcast(x, o));
  };
  check_op(c);
}

TEST(CollectiveGraph, AlltoAll) {
  OpCase c;
  c.x_shape = {2, 3};
  c.graph = [](GraphBuilder&, CollectiveBuilder& cb, Value x, int) {
    return std::vector<Value>{cb.all_to_all(x, 3, 1, 0)};
  };
  c.direct = [](const comm::Group& g, const Tensor& x, int) {
    comm::AllToAllOptions o;
    o.group = g;
    o.split_count = 3;
    o.split_dim = 1;
    o.concat_dim = 0;
    return one(comm::all_to_all(x, o));
  };
  check_op(c);
}

// A ring both ways, two transfers per rank: x (2, 2) goes right whole, its first row goes left.
TEST(CollectiveGraph, NeighborExchange) {
  const auto right = [](int r) { return (r + 1) % 3; };
  const auto left = [](int r) { return (r + 2) % 3; };
  OpCase c;
  c.x_shape = {2, 2};
  c.graph = [=](GraphBuilder& gb, CollectiveBuilder& cb, Value x, int r) {
    const Value row = gb.reshape(gb.strided_slice(x, {0}, {1}), {2});
    return cb.neighbor_exchange({x, row}, {right(r), left(r)}, {right(r), left(r)}, {{2}, {2, 2}}, {{2, 2}, {2}});
  };
  c.direct = [=](const comm::Group& g, const Tensor& x, int r) {
    comm::NeighborExchangeOptions o;
    o.group = g;
    o.send_rank_ids = {right(r), left(r)};
    o.recv_rank_ids = {right(r), left(r)};
    o.recv_shapes = {{2}, {2, 2}};
    o.send_shapes = {{2, 2}, {2}};
    return comm::neighbor_exchange({x, x.rows(0, 1).view({2})}, o);
  };
  check_op(c);
}

// A 2 x 2 grid of tiles (rank = 2 * row + col), every neighbour including the corners, with
// lengths that differ per side, so a halo placed in the wrong slot has the wrong shape.
TEST(CollectiveGraph, NeighborExchangeV2OnAGrid) {
  // Neighbour of rank r in direction d (top, top_right, right, bottom_right, bottom, ...).
  const auto ids = [](int r) {
    const int row = r / 2, col = r % 2;
    const int dr[8] = {-1, -1, 0, 1, 1, 1, 0, -1}, dc[8] = {0, 1, 1, 1, 0, -1, -1, -1};
    std::vector<int64_t> out;
    for (int d = 0; d < 8; ++d) {
      const int nr = row + dr[d], nc = col + dc[d];
      out.push_back(nr >= 0 && nr < 2 && nc >= 0 && nc < 2 ? nr * 2 + nc : -1);
    }
    return out;
  };
  // Every rank sends 1 row up, 2 rows down, 1 column left, 2 columns right, so it receives
  // 2 rows from above, 1 from below, 2 columns from the left and 1 from the right, where it has
  // those neighbours (0 elsewhere, so edge tiles come out smaller).
  const std::vector<int64_t> send_lens{1, 2, 1, 2};
  const auto recv_lens = [ids](int r) {
    const std::vector<int64_t> id = ids(r);
    return std::vector<int64_t>{id[0] >= 0 ? 2 : 0, id[4] >= 0 ? 1 : 0, id[6] >= 0 ? 2 : 0, id[2] >= 0 ? 1 : 0};
  };
  OpCase c;
  c.ranks = 4;
  c.x_shape = {1, 2, 3, 3};
  c.graph = [=](GraphBuilder&, CollectiveBuilder& cb, Value x, int r) {
    return std::vector<Value>{cb.neighbor_exchange_v2(x, ids(r), send_lens, ids(r), recv_lens(r))};
  };
  c.direct = [=](const comm::Group& g, const Tensor& x, int r) {
    comm::NeighborExchangeV2Options o;
    o.group = g;
    for (int64_t id : ids(r)) o.send_rank_ids.push_back(static_cast<int>(id));
    o.recv_rank_ids = o.send_rank_ids;
    o.send_lens = send_lens;
    o.recv_lens = recv_lens(r);
    return one(comm::neighbor_exchange_v2(x, o));
  };
  check_op(c);
}

// Two tiles side by side on a periodic row: each is the other's left and right neighbour, so
// the gradient's messages between the pair must pair up by direction.
TEST(CollectiveGraph, NeighborExchangeV2PeriodicPair) {
  const std::vector<int64_t> send_lens{0, 0, 1, 2}, recv_lens{0, 0, 2, 1};
  const auto ids = [](int r) { return std::vector<int64_t>{-1, -1, 1 - r, -1, -1, -1, 1 - r, -1}; };
  OpCase c;
  c.ranks = 2;
  c.x_shape = {1, 1, 2, 3};
  c.graph = [=](GraphBuilder&, CollectiveBuilder& cb, Value x, int r) {
    return std::vector<Value>{cb.neighbor_exchange_v2(x, ids(r), send_lens, ids(r), recv_lens)};
  };
  c.direct = [=](const comm::Group& g, const Tensor& x, int r) {
    comm::NeighborExchangeV2Options o;
    o.group = g;
    for (int64_t id : ids(r)) o.send_rank_ids.push_back(static_cast<int>(id));
    o.recv_rank_ids = o.send_rank_ids;
    o.send_lens = send_lens;
    o.recv_lens = recv_lens;
    return one(comm::neighbor_exchange_v2(x, o));
  };
  check_op(c);
}

}  // namespace
}  // namespace sf
