// Every ordered pair of a set of layouts of a 2-D tensor — replicated, split on one axis, split
// over several axes, partial, on (2,2,2) and on other matrices of the same 8 devices — is
// planned, run on 8 virtual ranks, and every rank's output shard compared with the expected
// slice exactly (for a partial target: the sum of the shares over the partial axes). Values
// are small integers, so every float sum is exact. The same graphs, run on arbitrary per-rank
// inputs, check that the backward of the inserted ops is the exact adjoint of their forward:
// sum_r <y_r, c_r> = sum_r <x_r, dx_r>. A second suite does the same on 6 devices, where (2,3)
// and (3,2) have no common refinement and plans go through the replicated layout.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/redistribution_planner.h>
#include <shardflow/parallel/strategy.h>
#include "tests/parallel/redistribution_world.h"

namespace sf {
namespace {

struct NamedLayout {
  std::string name;
  TensorLayout layout;
};

struct Suite {
  int devices;
  Shape shape;
  std::vector<NamedLayout> layouts;
};

const Suite& mesh_2x2x2() {
  static const Suite s = [] {
    const Layout m({2, 2, 2}, {"dp", "sp", "mp"});
    const DeviceMatrix mesh({2, 2, 2});
    return Suite{8,
                 {8, 16},
                 {{"Replicated", m("None", "None")},
                  {"RowsByDp", m("dp", "None")},
                  {"RowsByMp", m("mp", "None")},
                  {"ColsBySp", m("None", "sp")},
                  {"ColsByMp", m("None", "mp")},
                  {"ColsBySpDp", m("None", {"sp", "dp"})},
                  {"RowsByDpSpMp", m({"dp", "sp", "mp"}, "None")},
                  {"Seed001", m("mp", {"sp", "dp"})},
                  {"RowsByMpSpColsByDp", m({"mp", "sp"}, "dp")},
                  {"PartialMp", TensorLayout(mesh, {{}, {}}, {2})},
                  {"PartialDpColsBySp", TensorLayout(mesh, {{}, {1}}, {0})},
                  {"PartialDpSpRowsByMp", TensorLayout(mesh, {{2}, {}}, {0, 1})},
                  {"PartialAll", TensorLayout(mesh, {{}, {}}, {0, 1, 2})},
                  {"Strategy2x4", strategy_to_layout({2, 4}, 8)},
                  {"Strategy4x2", strategy_to_layout({4, 2}, 8)},
                  {"Strategy4x1", strategy_to_layout({4, 1}, 8)},
                  {"Partial4On2x4", TensorLayout(DeviceMatrix({2, 4}), {{0}, {}}, {1})}}};
  }();
  return s;
}

const Suite& mesh_six() {
  static const Suite s{6,
                       {6, 6},
                       {{"Strategy2x3", strategy_to_layout({2, 3}, 6)},
                        {"Strategy3x2", strategy_to_layout({3, 2}, 6)},
                        {"Strategy6x1", strategy_to_layout({6, 1}, 6)},
                        {"Strategy3x1", strategy_to_layout({3, 1}, 6)},
                        {"Replicated", strategy_to_layout({1, 1}, 6)},
                        {"PartialOn3x2", TensorLayout(DeviceMatrix({3, 2}), {{0}, {}}, {1})}}};
  return s;
}

float value_at(const Shape& shape, int64_t i, int64_t j) { return static_cast<float>(i * shape[1] + j + 1); }

// Rank `rank`'s shard of the test tensor in `l`; on partial axes every rank but the first holds
// a small integer and the first the rest, so the shares sum to the value exactly.
Tensor shard_of(const TensorLayout& l, const Shape& shape, int rank, bool shares) {
  const std::vector<DimSlice> s = l.slice(shape, rank);
  Tensor t({s[0].extent, s[1].extent});
  const int64_t parts = l.mesh().size_of(l.partial()), part = l.mesh().index_on(rank, l.partial());
  for (int64_t i = 0; i < s[0].extent; ++i)
    for (int64_t j = 0; j < s[1].extent; ++j) {
      const int64_t gi = s[0].offset + i, gj = s[1].offset + j;
      const auto other = [&](int64_t p) { return static_cast<float>((gi * 7 + gj * 3 + p) % 5 - 2); };
      float v = value_at(shape, gi, gj);
      if (shares && part > 0) v = other(part);
      if (shares && part == 0)
        for (int64_t p = 1; p < parts; ++p) v -= other(p);
      t.f32()[i * s[1].extent + j] = v;
    }
  return t;
}

// Small integers from a position-dependent hash, for the adjoint check.
Tensor arbitrary(const Shape& shape, int seed) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>((i * 31 + seed * 17 + i * i) % 7 - 3);
  return t;
}

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += static_cast<double>(a.f32()[i]) * b.f32()[i];
  return s;
}

void check_all_from(const Suite& suite, size_t src) {
  const int n = suite.devices;
  const NamedLayout& from = suite.layouts[src];
  std::vector<RedistributionPlan> plans;
  for (const NamedLayout& to : suite.layouts)
    plans.push_back(
        plan_redistribution(from.layout, to.layout, suite.shape, DType::kF32, fmt::format("{} -> {}", from.name, to.name)));

  // Forward on the layout's own shards.
  std::vector<std::vector<Tensor>> xs(n), cs(n);
  for (int r = 0; r < n; ++r)
    for (const auto& plan : plans) {
      xs[r].push_back(shard_of(plan.from, suite.shape, r, true));
      cs[r].push_back(Tensor(plan.to.local_shape(suite.shape)));
    }
  const std::vector<paralleltest::RankResult> fwd = paralleltest::run_plans(n, plans, xs, cs);
  for (size_t p = 0; p < plans.size(); ++p) {
    const TensorLayout& to = plans[p].to;
    for (int r = 0; r < n; ++r) {
      Tensor got = fwd[r].out[p].clone();
      if (to.is_partial()) {
        for (int m : to.group(r, to.partial()))
          if (m != r)
            for (int64_t i = 0; i < got.numel(); ++i) got.f32()[i] += fwd[m].out[p].f32()[i];
      }
      const Tensor want = shard_of(to, suite.shape, r, false);
      ASSERT_EQ(got.shape(), want.shape()) << plans[p].str() << "\nrank " << r;
      for (int64_t i = 0; i < want.numel(); ++i)
        ASSERT_EQ(got.f32()[i], want.f32()[i])
            << from.name << " -> " << suite.layouts[p].name << ", rank " << r << ", element " << i << "\n"
            << plans[p].str();
    }
  }

  // Backward: the exact adjoint of the forward, on inputs no layout describes.
  for (int r = 0; r < n; ++r)
    for (size_t p = 0; p < plans.size(); ++p) {
      xs[r][p] = arbitrary(xs[r][p].shape(), 100 * r + static_cast<int>(p));
      cs[r][p] = arbitrary(cs[r][p].shape(), 1000 + 100 * r + static_cast<int>(p));
    }
  const std::vector<paralleltest::RankResult> bwd = paralleltest::run_plans(n, plans, xs, cs);
  for (size_t p = 0; p < plans.size(); ++p) {
    double forward = 0, backward = 0;
    for (int r = 0; r < n; ++r) {
      forward += dot(bwd[r].out[p], cs[r][p]);
      ASSERT_EQ(bwd[r].grad[p].shape(), xs[r][p].shape());
      backward += dot(xs[r][p], bwd[r].grad[p]);
    }
    EXPECT_EQ(forward, backward) << "gradient of " << from.name << " -> " << suite.layouts[p].name << "\n"
                                 << plans[p].str();
  }
}

class RedistributionOn2x2x2 : public ::testing::TestWithParam<size_t> {};
TEST_P(RedistributionOn2x2x2, FromThisLayoutToEveryLayout) { check_all_from(mesh_2x2x2(), GetParam()); }
INSTANTIATE_TEST_SUITE_P(AllPairs, RedistributionOn2x2x2,
                         ::testing::Range<size_t>(0, mesh_2x2x2().layouts.size()),
                         [](const auto& info) { return mesh_2x2x2().layouts[info.param].name; });

class RedistributionOnSix : public ::testing::TestWithParam<size_t> {};
TEST_P(RedistributionOnSix, FromThisLayoutToEveryLayout) { check_all_from(mesh_six(), GetParam()); }
INSTANTIATE_TEST_SUITE_P(AllPairs, RedistributionOnSix, ::testing::Range<size_t>(0, mesh_six().layouts.size()),
                         [](const auto& info) { return mesh_six().layouts[info.param].name; });

}  // namespace
}  // namespace sf
