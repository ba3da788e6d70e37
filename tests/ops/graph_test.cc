// Graph::add: refusing unknown ops, and the registry holding every built-in op.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/graph.h>
#include <shardflow/ops/op_def.h>

namespace sf {
namespace {

TEST(Graph, UnknownOpThrowsNotFoundNamingIt) {
  Graph g;
  EXPECT_THAT([&] { g.add("Conv9D", {}); }, ::testing::ThrowsMessage<NotFound>(::testing::HasSubstr("'Conv9D'")));
}

TEST(Graph, RegistryHoldsEveryBuiltinOp) {
  for (const char* op : {"Input", "Parameter", "Fill", "MatMul", "BiasAdd", "BiasAddGrad", "Add", "Sub", "Mul",
                         "SumToShape", "ReLU", "ReluGrad", "Flatten", "Reshape", "StridedSlice", "StridedSliceGrad",
                         "Concat", "ReduceSum", "ReduceMean", "BroadcastTo", "SoftmaxCrossEntropy",
                         "SoftmaxCrossEntropyGrad", "MSELoss", "MSELossGrad"})
    EXPECT_TRUE(OpRegistry::global().contains(op)) << op;
}

}  // namespace
}  // namespace sf
