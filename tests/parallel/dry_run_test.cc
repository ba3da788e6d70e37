// Dry runs: seed 001's network (784-512-512-10, softmax cross entropy) planned for 4096 ranks
// without starting one, in well under a minute, with the memory and bytes per rank the
// formulas give — data parallel (every weight whole, the gradients AllReduced over all 4096)
// and with matmul2 split (8,512),(512,1) (its weight in 512 row blocks, its partial sums
// AllReduced over groups of 512 forward and backward).
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include <shardflow/parallel/dry_run.h>

namespace sf {
namespace {

constexpr int64_t kRanks = 4096;
constexpr int64_t kBatch = 2 * kRanks;

struct Seed001Mlp {
  Graph g;
  int loss = -1;
  Seed001Mlp() {
    GraphBuilder b(g);
    Value x = b.input("x", {kBatch, 784});
    x = b.relu(b.op("MatMul", {x, b.parameter("fc1", {784, 512})}, {}, "matmul1"));
    x = b.relu(b.op("MatMul", {x, b.parameter("fc2", {512, 512})}, {}, "matmul2"));
    x = b.op("MatMul", {x, b.parameter("fc3", {512, 10})}, {}, "matmul3");
    loss = b.softmax_cross_entropy(x, b.input("label", {kBatch}, DType::kI32)).id;
  }
};

double ring(double n, double bytes) { return 2 * (n - 1) / n * bytes; }

TEST(DryRun, Seed001DataParallelOn4096RanksMatchesTheFormulas) {
  const Seed001Mlp net;
  const DryRun d = dry_run(net.g, {net.loss}, {}, kRanks);
  EXPECT_LT(d.seconds, 60);
  const double params = (784 * 512 + 512 * 512 + 512 * 10) * 4.0;
  EXPECT_DOUBLE_EQ(d.per_rank.parameter_bytes, params);
  EXPECT_DOUBLE_EQ(d.per_rank.collective_bytes.at("AllReduce (gradients)"), ring(kRanks, params));
  // Two rows per rank: matmul1, relu, matmul2, relu (512 wide), matmul3 (10), and the loss.
  EXPECT_GE(d.per_rank.activation_bytes, (4 * 2 * 512 + 2 * 10) * 4.0);
  EXPECT_LE(d.per_rank.activation_bytes, (4 * 2 * 512 + 2 * 10) * 4.0 + 64);
  EXPECT_GT(d.local_ops, 0);
}

TEST(DryRun, Seed001ModelParallelMatmulOn4096RanksMatchesTheFormulas) {
  const Seed001Mlp net;
  const DryRun d = dry_run(net.g, {net.loss}, {{"matmul2", OpStrategy{{{8, 512}, {512, 1}}}}}, kRanks);
  EXPECT_LT(d.seconds, 60);
  const double whole = (784 * 512 + 512 * 10) * 4.0, fc2_block = 1 * 512 * 4.0;
  EXPECT_DOUBLE_EQ(d.per_rank.parameter_bytes, whole + fc2_block);
  EXPECT_DOUBLE_EQ(d.per_rank.collective_bytes.at("AllReduce (gradients)"),
                   ring(kRanks, whole) + ring(8, fc2_block));  // fc2's block is on the 8 batch blocks
  // matmul2's (1024, 512) partial sums over groups of 512, forward and backward; the loss's
  // scalar adds a few bytes.
  const double partial = 1024 * 512 * 4.0;
  EXPECT_GE(d.per_rank.collective_bytes.at("AllReduce"), 2 * ring(512, partial));
  EXPECT_LE(d.per_rank.collective_bytes.at("AllReduce"), 2 * ring(512, partial) + 64);
}

}  // namespace
}  // namespace sf
