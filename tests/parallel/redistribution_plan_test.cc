// Plan choice: pinned plans for the basic layout changes of DESIGN.md's table (kind, groups,
// dims, bytes per rank), several steps where one does not suffice, plans across device
// matrices (common refinement, or through the replicated layout where there is none).
#include <shardflow/parallel/redistribution_planner.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/mesh_refinement.h>
#include <shardflow/parallel/redistribution_executor.h>
#include <shardflow/parallel/strategy.h>

namespace sf {
namespace {
// Its own namespace: the test files are compiled several to a unit.
namespace redistribution_plan_test {

using ::testing::ElementsAre;

const Layout kMesh({2, 2, 2}, {"dp", "sp", "mp"});
const DeviceMatrix kCube({2, 2, 2});
const Shape kShape{8, 16};  // 512 bytes of f32

std::vector<StepKind> kinds(const RedistributionPlan& p) {
  std::vector<StepKind> out;
  for (const auto& s : p.steps) out.push_back(s.kind);
  return out;
}

TEST(RedistributionPlan, PartialToReplicatedIsOneAllReduce) {
  const RedistributionPlan p = plan_redistribution(TensorLayout(kCube, {{}, {}}, {2}), kMesh("None", "None"), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kAllReduce)) << p.str();
  EXPECT_THAT(p.steps[0].axes, ElementsAre(2));
  EXPECT_THAT(p.steps[0].groups(),
              ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3), ElementsAre(4, 5), ElementsAre(6, 7)));
  EXPECT_EQ(p.bytes(), 512.0);  // 2 (n-1)/n of the shard, n = 2
}

// Seed 002: MatMul ((2,4),(4,1)) on 8 devices; its output, partial on axis 1 of (2,4,1), is
// AllReduced over ranks 0-1-2-3 and 4-5-6-7.
TEST(RedistributionPlan, Seed002AllReducesOverRanks0123And4567) {
  const DeviceMatrix m({2, 4, 1});
  const RedistributionPlan p =
      plan_redistribution(TensorLayout(m, {{0}, {2}}, {1}), TensorLayout(m, {{0}, {2}}), {16, 8});
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kAllReduce)) << p.str();
  EXPECT_THAT(p.steps[0].groups(), ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
  EXPECT_THAT(p.steps[0].group(6), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(p.bytes(), 2.0 * 3 / 4 * (8 * 8 * 4));
  const auto groups = redistribution_groups(p, 6);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].first, "4-5-6-7");
}

TEST(RedistributionPlan, PartialToSplitIsOneReduceScatter) {
  const RedistributionPlan p = plan_redistribution(TensorLayout(kCube, {{}, {}}, {2}), kMesh("mp", "None"), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kReduceScatter)) << p.str();
  EXPECT_THAT(p.steps[0].dims, ElementsAre(0));
  EXPECT_THAT(p.steps[0].group(3), ElementsAre(2, 3));
  EXPECT_EQ(p.bytes(), 256.0);  // (n-1)/n of the shard
}

// Seed 001: matmul1's partial sums (over sp and dp) become out_strategy ("mp","sp","dp"): one
// collective can only append axes in device-matrix order, so it takes two scatters, costing
// what one over both would.
TEST(RedistributionPlan, Seed001OutStrategyIsTwoReduceScatters) {
  const RedistributionPlan p = plan_redistribution(TensorLayout(kCube, {{2}, {}}, {0, 1}),
                                                   kMesh({"mp", "sp", "dp"}, "None"), {32, 512});
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kReduceScatter, StepKind::kReduceScatter)) << p.str();
  EXPECT_THAT(p.steps[0].axes, ElementsAre(1));
  EXPECT_THAT(p.steps[0].group(0), ElementsAre(0, 2));
  EXPECT_THAT(p.steps[1].axes, ElementsAre(0));
  EXPECT_THAT(p.steps[1].group(0), ElementsAre(0, 4));
  const double shard = 16 * 512 * 4;
  EXPECT_EQ(p.bytes(), 3.0 / 4 * shard);
}

TEST(RedistributionPlan, SplitDim0ToSplitDim1IsOneAlltoAll) {
  const RedistributionPlan p = plan_redistribution(kMesh("mp", "None"), kMesh("None", "mp"), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kAlltoAll)) << p.str();
  EXPECT_THAT(p.steps[0].dims, ElementsAre(0, 1));
  EXPECT_THAT(p.steps[0].group(4), ElementsAre(4, 5));
  EXPECT_EQ(p.bytes(), 128.0);  // half of a 256-byte shard
}

TEST(RedistributionPlan, SplitToReplicatedIsOneAllGather) {
  const RedistributionPlan p = plan_redistribution(kMesh("None", {"sp", "mp"}), kMesh("None", "None"), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kAllGather)) << p.str();
  EXPECT_THAT(p.steps[0].axes, ElementsAre(1, 2));
  EXPECT_THAT(p.steps[0].group(5), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(p.bytes(), 3.0 * 128);  // n-1 shards of 128 bytes
}

TEST(RedistributionPlan, ReplicatedToSplitIsALocalSlice) {
  const RedistributionPlan p = plan_redistribution(kMesh("None", "None"), kMesh("mp", {"sp", "dp"}), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kSlice)) << p.str();
  EXPECT_THAT(p.steps[0].dims, ElementsAre(0, 1));
  EXPECT_TRUE(p.steps[0].groups().empty());
  EXPECT_TRUE(redistribution_groups(p, 0).empty());
  EXPECT_EQ(p.bytes(), 0.0);
}

TEST(RedistributionPlan, SameLayoutNeedsNoStep) {
  EXPECT_TRUE(plan_redistribution(kMesh("mp", "dp"), kMesh("mp", "dp"), kShape).steps.empty());
  // The same placement written on another device matrix: (8,1) on 8 and dim 0 over (2,4).
  const Layout flat({2, 4}, {"a", "b"});
  EXPECT_TRUE(plan_redistribution(strategy_to_layout({8, 1}, 8), flat({"a", "b"}, "None"), kShape).steps.empty());
}

// Partial on mp, wanted split by sp: cut first (free), then reduce the smaller shard.
TEST(RedistributionPlan, SlicesBeforeItReduces) {
  const RedistributionPlan p = plan_redistribution(TensorLayout(kCube, {{}, {}}, {2}), kMesh("None", "sp"), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kSlice, StepKind::kAllReduce)) << p.str();
  EXPECT_EQ(p.bytes(), 256.0);
}

// Partial over 4 ranks with a replicated axis to spare is still one AllReduce: the planner does
// not cut along an axis the target does not split (to reduce less and gather back).
TEST(RedistributionPlan, PartialOverFourRanksIsOneAllReduce) {
  const RedistributionPlan p =
      plan_redistribution(TensorLayout(kCube, {{}, {}}, {1, 2}), kMesh("None", "None"), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kAllReduce)) << p.str();
  EXPECT_THAT(p.steps[0].groups(), ElementsAre(ElementsAre(0, 1, 2, 3), ElementsAre(4, 5, 6, 7)));
  EXPECT_EQ(p.bytes(), 768.0);
}

// Rows by dp -> rows by (sp, dp): dp must leave dim 0 for sp to go in front of it. Moving it
// to the columns and back (AlltoAll twice, 128 + 64 bytes) is cheaper than gathering it (256).
TEST(RedistributionPlan, SeveralStepsWhenOneDoesNotSuffice) {
  const RedistributionPlan p = plan_redistribution(kMesh("dp", "None"), kMesh({"sp", "dp"}, "None"), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kAlltoAll, StepKind::kSlice, StepKind::kAlltoAll)) << p.str();
  EXPECT_THAT(p.steps[0].dims, ElementsAre(0, 1));
  EXPECT_THAT(p.steps[2].dims, ElementsAre(1, 0));
  EXPECT_THAT(p.steps[0].group(2), ElementsAre(2, 6));
  EXPECT_EQ(p.bytes(), 192.0);
}

TEST(RedistributionPlan, ReplicatedToPartialIsLocal) {
  const RedistributionPlan p = plan_redistribution(kMesh("None", "None"), TensorLayout(kCube, {{}, {}}, {0}), kShape);
  ASSERT_THAT(kinds(p), ElementsAre(StepKind::kPartial)) << p.str();
  EXPECT_EQ(p.bytes(), 0.0);
}

TEST(MeshRefinement, CommonRefinementWhereOneExists) {
  EXPECT_EQ(common_refinement(DeviceMatrix({2, 4}), DeviceMatrix({4, 2}))->dims(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(common_refinement(DeviceMatrix({4, 1, 2}), DeviceMatrix({8}))->dims(), (std::vector<int64_t>{4, 2}));
  EXPECT_FALSE(common_refinement(DeviceMatrix({2, 3}), DeviceMatrix({3, 2})).has_value());
  EXPECT_FALSE(common_refinement(DeviceMatrix({2, 2}), DeviceMatrix({8})).has_value());
}

TEST(MeshRefinement, RefinedLayoutPutsEveryBlockOnTheSameRank) {
  const TensorLayout coarse = strategy_to_layout({2, 4}, 8);
  const TensorLayout fine = refine(coarse, DeviceMatrix({2, 2, 2}));
  EXPECT_EQ(fine.tensor_map(), (TensorLayout::TensorMap{{0}, {1, 2}}));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(fine.slice(kShape, r), coarse.slice(kShape, r)) << "rank " << r;
}

// Strategy (2,4) -> (4,2): both on (2,2,2), dim 1's major axis moves to dim 0.
TEST(RedistributionPlan, AcrossDeviceMatricesWithACommonRefinement) {
  const RedistributionPlan p = plan_redistribution(strategy_to_layout({2, 4}, 8), strategy_to_layout({4, 2}, 8), kShape);
  ASSERT_FALSE(p.steps.empty());
  for (const auto& s : p.steps) EXPECT_EQ(s.before.mesh().dims(), (std::vector<int64_t>{2, 2, 2})) << p.str();
  EXPECT_LT(p.bytes(), 3.0 * 64) << p.str();  // cheaper than gathering dim 1 whole
}

// (2,3) and (3,2) on 6 devices share no refinement: gather on one, cut on the other.
TEST(RedistributionPlan, AcrossDeviceMatricesWithoutACommonRefinement) {
  const RedistributionPlan p = plan_redistribution(strategy_to_layout({2, 3}, 6), strategy_to_layout({3, 2}, 6), {6, 6});
  ASSERT_GE(p.steps.size(), 2u) << p.str();
  EXPECT_EQ(p.steps.back().kind, StepKind::kSlice) << p.str();
  EXPECT_EQ(p.steps.back().after.mesh().dims(), (std::vector<int64_t>{3, 2}));
}

}  // namespace redistribution_plan_test
}  // namespace
}  // namespace sf
