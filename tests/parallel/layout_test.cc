// Layouts: MindSpore's rank order, seed 001's placement of `a`, the slice and local shape a
// rank holds, replica groups and groups along axes, tuple strategies with the repeat axis.
#include <shardflow/parallel/layout.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/parallel/strategy.h>

namespace sf {
namespace {

using ::testing::ElementsAre;

const Layout kMesh({2, 2, 2}, {"dp", "sp", "mp"});

TEST(DeviceMatrix, RankIsRowMajorLastAxisFastest) {
  const DeviceMatrix m({2, 2, 2});
  for (int dp = 0; dp < 2; ++dp)
    for (int sp = 0; sp < 2; ++sp)
      for (int mp = 0; mp < 2; ++mp) {
        const int64_t rank = dp * 4 + sp * 2 + mp;
        EXPECT_EQ(m.rank_of({dp, sp, mp}), rank);
        EXPECT_THAT(m.coords(rank), ElementsAre(dp, sp, mp));
      }
  EXPECT_THAT(DeviceMatrix({2, 3}).coords(4), ElementsAre(1, 1));
}

// Seed 001: a = [[a0, a1, a2, a3], [a4, a5, a6, a7]] with layout("mp", ("sp", "dp")).
TEST(Layout, Seed001PlacesA0ToA3OnRanks0426) {
  const TensorLayout a = kMesh("mp", {"sp", "dp"});
  const Shape shape{2, 4};
  std::vector<int> owner_of(8, -1);
  for (int rank = 0; rank < 8; ++rank) {
    const std::vector<DimSlice> s = a.slice(shape, rank);
    ASSERT_EQ(s[0].extent, 1);
    ASSERT_EQ(s[1].extent, 1);
    const int64_t element = s[0].offset * 4 + s[1].offset;  // a_k is row k / 4, column k % 4
    EXPECT_EQ(owner_of[element], -1) << "two ranks hold a" << element;
    owner_of[element] = rank;
  }
  EXPECT_THAT(owner_of, ElementsAre(0, 4, 2, 6, 1, 5, 3, 7));
  EXPECT_THAT(a.local_shape(shape), ElementsAre(1, 1));
  EXPECT_EQ(a.str(), "('mp', ('sp', 'dp')) on (2,2,2)");
  EXPECT_EQ(a.spec(), "layout('mp', ('sp', 'dp'))");
}

TEST(Layout, NoneAndSlicesOfAWiderTensor) {
  const TensorLayout w = kMesh({"sp", "dp"}, "None");
  const Shape shape{32, 10};
  EXPECT_THAT(w.local_shape(shape), ElementsAre(8, 10));
  // Rank 4 is dp=1, sp=0: block sp*2 + dp = 1 of dim 0, all of dim 1.
  EXPECT_THAT(w.slice(shape, 4), ElementsAre(DimSlice{8, 8}, DimSlice{0, 10}));
  EXPECT_THAT(w.slice(shape, 3), ElementsAre(DimSlice{16, 8}, DimSlice{0, 10}));
  EXPECT_THAT(w.replicated_axes(), ElementsAre(2));
}

TEST(Layout, NamesKnownAtRunTimeEqualTheBracedList) {
  const Layout layout({2, 2, 2, 2, 2, 2, 2}, {"a", "b", "c", "d", "e", "f", "g"});
  EXPECT_EQ(layout(DimAxes(std::vector<std::string>{"b", "a"}), "None"), layout({"b", "a"}, "None"));
  // Seven axes on one dim: the braced list's length was never the limit.
  EXPECT_EQ(layout(DimAxes(std::vector<std::string>{"a", "b", "c", "d", "e", "f", "g"})),
            layout({"a", "b", "c", "d", "e", "f", "g"}));
}

TEST(Layout, ReplicaGroupsAndGroupsAlongAxes) {
  const TensorLayout x = kMesh("dp", "None");
  // Replicated along sp and mp: the ranks with the same dp.
  EXPECT_THAT(x.replica_group(5), ElementsAre(4, 5, 6, 7));
  EXPECT_THAT(x.group(5, {0}), ElementsAre(1, 5));
  EXPECT_THAT(x.group(6, {0, 2}), ElementsAre(2, 3, 6, 7));
  EXPECT_THAT(x.mesh().groups({1}), ElementsAre(ElementsAre(0, 2), ElementsAre(1, 3), ElementsAre(4, 6),
                                                ElementsAre(5, 7)));
  // A partial axis: same slice, other shares, so not replicas.
  const TensorLayout p(DeviceMatrix({2, 2, 2}), {{0}, {}}, {2});
  EXPECT_THAT(p.replica_group(5), ElementsAre(5, 7));
  EXPECT_TRUE(p.is_partial());
}

TEST(Strategy, TupleOnAllDevicesMapsDimIToAxisI) {
  const TensorLayout l = strategy_to_layout({2, 4}, 8);
  EXPECT_EQ(l.mesh().dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(l.tensor_map(), (TensorLayout::TensorMap{{0}, {1}}));
  EXPECT_EQ(l.spec(), "strategy (2,4)");
}

// (4,1) on 8 devices is repeated calculation: device matrix (4,1,2), block i on ranks 2i, 2i+1.
TEST(Strategy, FewerDevicesAppendTheRepeatAsTheLastAxis) {
  const TensorLayout l = strategy_to_layout({4, 1}, 8);
  EXPECT_EQ(l.mesh().dims(), (std::vector<int64_t>{4, 1, 2}));
  const Shape shape{32, 10};
  for (int rank = 0; rank < 8; ++rank)
    EXPECT_EQ(l.slice(shape, rank)[0], (DimSlice{rank / 2 * 8, 8})) << "rank " << rank;
  EXPECT_THAT(l.replica_group(6), ElementsAre(6, 7));
}

TEST(Strategy, LayoutWithFewerDevicesGetsTheRepeatAxisToo) {
  const Layout small({2, 2}, {"a", "b"});
  const TensorLayout l = small("a", "None").fit_to(8, "ReLU 'relu'");
  EXPECT_EQ(l.mesh().dims(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(l.tensor_map(), (TensorLayout::TensorMap{{0}, {}}));
  EXPECT_THAT(l.replica_group(0), ElementsAre(0, 1, 2, 3));
}

// An op's device matrix from its whole strategy, as a sharding rule builds it: MatMul
// ((2,4),(4,1)) has (2,4,1), X on axes (0,1), W on (1,2); the output is partial on axis 1.
TEST(Strategy, AnOpDeviceMatrixIsExpressible) {
  const DeviceMatrix m({2, 4, 1});
  const TensorLayout out(m, {{0}, {2}}, {1});
  EXPECT_THAT(out.local_shape({16, 8}), ElementsAre(8, 8));
  EXPECT_THAT(out.group(0, out.partial()), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(out.group(5, out.partial()), ElementsAre(4, 5, 6, 7));
}

}  // namespace
}  // namespace sf
