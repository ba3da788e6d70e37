// Bad strategies, each refused before any communication with a message naming the op and the
// rule: a split that does not divide its dim, the wrong number of inputs or dims, a device
// matrix that neither equals nor divides the device count, an unknown axis name, one axis used
// twice in one tensor, MatMul inputs that split the reduce dim differently, and more. The last
// test shows the refusal comes on every rank of a semi-auto Model::train before its first step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>
#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/sharding/graph_sharding.h>
#include "semi_auto_world.h"

namespace sf {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// Shards a graph of one MatMul "fc1" of x (32, 16) by w (16, 8) with `s` on 8 devices.
void shard_matmul(const OpStrategy& s, Shape x = {32, 16}) {
  Graph g;
  GraphBuilder b(g);
  const Value y = b.op("MatMul", {b.input("x", x), b.parameter("w", {16, 8})}, {}, "fc1");
  shard_graph(g, {b.reduce_sum(y).id}, {{"fc1", s}}, 8);
}

TEST(ShardingErrors, SplitThatDoesNotDivideTheDim) {
  EXPECT_THAT([] { shard_matmul(OpStrategy{{{4, 1}, {1, 2}}}, {30, 16}); },
              ThrowsMessage<ShapeError>(
                  AllOf(HasSubstr("MatMul 'fc1' input 0"), HasSubstr("(4,1) does not divide dim 0 of size 30"))));
}

TEST(ShardingErrors, WrongNumberOfInputs) {
  EXPECT_THAT([] { shard_matmul(OpStrategy{{{2, 4}}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("MatMul 'fc1': in_strategy ((2,4),) has 1 entries for the op's 2 inputs")));
}

TEST(ShardingErrors, WrongNumberOfDims) {
  EXPECT_THAT([] { shard_matmul(OpStrategy{{{2, 4, 1}, {4, 1}}}); },
              ThrowsMessage<InvalidArgument>(
                  HasSubstr("MatMul 'fc1': in_strategy entry 0 (2,4,1) has 3 dims but input 0 has 2 (shape (32, 16))")));
  EXPECT_THAT([] { shard_matmul(OpStrategy{{{2, 4}, {4, 1}}, {{8}}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("MatMul 'fc1': out_strategy (8) has 1 dims but the output has 2")));
}

TEST(ShardingErrors, DeviceMatrixNeitherEqualsNorDividesTheDeviceCount) {
  EXPECT_THAT([] { shard_matmul(OpStrategy{{{3, 1}, {1, 1}}}); },
              ThrowsMessage<InvalidArgument>(AllOf(
                  HasSubstr("MatMul 'fc1'"),
                  HasSubstr("device matrix (3,1,1) has 3 devices, which neither equals nor divides the 8 devices"))));
  EXPECT_THAT([] { shard_matmul(OpStrategy{{{4, 2}, {2, 2}}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("has 16 devices, which neither equals nor divides the 8")));
}

TEST(ShardingErrors, UnknownAxisName) {
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  EXPECT_THAT([&] { layout("tp", "None"); }, ThrowsMessage<InvalidArgument>(HasSubstr("'tp'")));
}

TEST(ShardingErrors, OneAxisUsedTwiceInOneTensor) {
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  EXPECT_THAT([&] { layout("dp", {"sp", "dp"}); }, ThrowsMessage<InvalidArgument>(HasSubstr("used twice")));
  // Across the op: x (dp, mp) and w (mp, dp) would put dp on both dims of the output.
  EXPECT_THAT([&] { shard_matmul(OpStrategy{{layout("dp", "mp"), layout("mp", "dp")}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr(
                  "MatMul 'fc1': axis ('dp') is used by loops m (rows) and n (columns); one axis may split only one dim")));
}

TEST(ShardingErrors, MatMulInputsWhoseReduceSplitsDisagree) {
  EXPECT_THAT([] { shard_matmul(OpStrategy{{{2, 4}, {2, 1}}}); },
              ThrowsMessage<InvalidArgument>(
                  HasSubstr("MatMul 'fc1': the inputs split loop k (reduce) differently: input 0 in 4 blocks ((2,4)), "
                            "input 1 in 2 ((2,1))")));
  const Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
  EXPECT_THAT([&] { shard_matmul(OpStrategy{{layout("dp", "sp"), layout("mp", "None")}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("the inputs split loop k (reduce) differently: input 0 over axes "
                                                       "('sp')")));
}

TEST(ShardingErrors, MixedFormsOtherMeshesBroadcastDimsAndUnknownOps) {
  const Layout a({2, 2, 2}, {"dp", "sp", "mp"}), b({8}, {"tp"});
  EXPECT_THAT([&] { shard_matmul(OpStrategy{{a("dp", "sp"), {2, 1}}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("mixes tuple strategies and layouts")));
  EXPECT_THAT([&] { shard_matmul(OpStrategy{{a("dp", "None"), b("None", "tp")}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("layouts on different device matrices")));
  EXPECT_THAT([] { shard_matmul(OpStrategy{{{0, 1}, {1, 1}}}); },
              ThrowsMessage<InvalidArgument>(HasSubstr("has 0 blocks on dim 0; each must be >= 1")));
  Graph g;
  GraphBuilder gb(g);
  const Value y = gb.op("Sub", {gb.input("x", {16, 32}), gb.parameter("c", {1, 32})}, {}, "sub");
  const Value c = gb.concat({y, y}, 0);
  EXPECT_THAT([&] { shard_graph(g, {y.id}, {{"sub", OpStrategy{{{2, 4}, {2, 4}}}}}, 8); },
              ThrowsMessage<InvalidArgument>(HasSubstr("Sub 'sub': in_strategy entry 1 (2,4) splits dim 0 of input 1, "
                                                       "which is broadcast (size 1)")));
  EXPECT_THAT([&] { shard_graph(g, {c.id}, {}, 8); },
              ThrowsMessage<NotFound>(HasSubstr("op Concat has no sharding rule")));
  EXPECT_THAT([&] { shard_graph(g, {y.id}, {{"fc9", OpStrategy{{{8, 1}}}}}, 8); },
              ThrowsMessage<NotFound>(HasSubstr("for 'fc9': the network has no op of that name")));
}

TEST(ShardingErrors, ModelTrainRefusesOnEveryRankBeforeTheFirstStep) {
  using namespace paralleltest;
  traintest::ParallelContextGuard ctx({.parallel_mode = ParallelMode::kSemiAutoParallel});
  std::vector<std::string> errors(8);
  traintest::run_world(8, traintest::Wire::kInproc, [&](int rank) {
    ClassifierNet net;
    net.matmul1.shard({{3, 1}, {1, 1}});
    Model model(net, loss_for(ClassifierNet::kKind), std::make_shared<nn::SGD>(net.trainable_params(), 0.1f));
    try {
      model.train(1, data_for(ClassifierNet::kKind));
    } catch (const InvalidArgument& e) {
      errors[rank] = e.what();
    }
  });
  for (const std::string& e : errors)
    EXPECT_THAT(e, HasSubstr("MatMul 'matmul1/MatMul': in_strategy ((3,1), (1,1)): device matrix (3,1,1) has 3 devices"));
}

}  // namespace
}  // namespace sf
