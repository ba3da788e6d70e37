// Gradient buckets: which gradients share an AllReduce (DDP's fill rule, small gradients last),
// and the graph a bucket becomes (FlattenConcat, AllReduce, the mean, offsets into the bucket).
#include <shardflow/train/grad_buckets.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>

namespace sf {
namespace {

using Buckets = std::vector<std::vector<size_t>>;

TEST(PlanBuckets, LargeGradientsFillBucketsInOrderAndSmallOnesGoLast) {
  const std::vector<int64_t> bytes{4, 100 << 10, 2 << 20, 40, 1 << 20};
  EXPECT_EQ(plan_buckets(bytes, 1 << 20), (Buckets{{1, 2}, {4}, {0, 3}}));
  EXPECT_EQ(plan_buckets(bytes, 0), (Buckets{{1}, {2}, {4}, {0, 3}}));
  EXPECT_EQ(plan_buckets(bytes, int64_t{1} << 40), (Buckets{{1, 2, 4}, {0, 3}}));
  EXPECT_EQ(plan_buckets({8, 8}, 0), (Buckets{{0, 1}}));
  EXPECT_EQ(plan_buckets({}, 0), Buckets{});
}

TEST(PlanBuckets, NegativeBucketBytesIsRefused) {
  EXPECT_THAT([] { plan_buckets({8}, -1); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("bucket_bytes must be >= 0, got -1")));
}

TEST(AppendGradAllReduce, PacksABucketReducesItOnceAndScalesIt) {
  Graph g;
  GraphBuilder b(g);
  Value w = b.input("gw", {256, 128});  // 128 KiB: large
  Value v = b.input("gv", {128, 256});
  Value s = b.input("gs", {10});  // small
  const ReducedGradients r = append_grad_all_reduce(g, {s.id, w.id, v.id}, {"world", 4}, int64_t{1} << 30, 0.25f);
  ASSERT_EQ(r.buckets, (Buckets{{1, 2}, {0}}));
  ASSERT_EQ(r.all_reduce.size(), 2u);
  const Node& big = g.node(r.all_reduce[0]);
  EXPECT_EQ(big.op, "AllReduce");
  EXPECT_EQ(big.attrs.get_str("group"), "world");
  EXPECT_EQ(g.node(big.inputs[0]).op, "FlattenConcat");
  EXPECT_EQ(big.shape, (Shape{2 * 256 * 128}));
  EXPECT_EQ(g.node(r.node[1]).op, "Mul");  // the mean
  EXPECT_EQ(r.node[1], r.node[2]);
  EXPECT_EQ(r.offset[1], 0);
  EXPECT_EQ(r.offset[2], 256 * 128);
  EXPECT_EQ(g.node(g.node(r.all_reduce[1]).inputs[0]).id, s.id);  // a bucket of one is not packed
  const std::vector<int> unpacked = unpack_reduced(g, r, {s.id, w.id, v.id});
  EXPECT_EQ(g.node(unpacked[0]).shape, (Shape{10}));
  EXPECT_EQ(g.node(unpacked[2]).op, "Reshape");
  EXPECT_EQ(g.node(unpacked[2]).shape, (Shape{128, 256}));
}

}  // namespace
}  // namespace sf
