// print_ir: one line per node with inputs, attributes, type and name.
#include <shardflow/ops/printer.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/ops/builder.h>

namespace sf {
namespace {

TEST(PrintIr, ShowsOpInputsAttrsTypeAndName) {
  Graph g;
  GraphBuilder gb(g);
  Value x = gb.input("x", {2, 3});
  Value w = gb.parameter("fc1.weight", {4, 3});
  gb.push_scope("fc1");
  gb.matmul(x, w, false, true);
  const std::string ir = print_ir(g);
  EXPECT_THAT(ir, ::testing::HasSubstr("%2 = MatMul(%0, %1) {transpose_a=0, transpose_b=1} : f32(2, 4)  # fc1/MatMul\n"));
  EXPECT_THAT(ir, ::testing::HasSubstr("%0 = Input() {dtype='f32', shape=(2, 3)} : f32(2, 3)  # x\n"));
  EXPECT_THAT(ir, ::testing::HasSubstr("# fc1.weight"));
  EXPECT_EQ(std::count(ir.begin(), ir.end(), '\n'), 3);
}

}  // namespace
}  // namespace sf
