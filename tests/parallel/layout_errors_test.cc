// Bad layouts and strategies are refused with a message naming the op or tensor, the layout
// or strategy, and the rule broken.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <shardflow/core/error.h>
#include <shardflow/parallel/layout.h>
#include <shardflow/parallel/redistribution_planner.h>
#include <shardflow/parallel/strategy.h>

namespace sf {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

const Layout kMesh({2, 2, 2}, {"dp", "sp", "mp"});

TEST(LayoutErrors, SplitThatDoesNotDivideTheDim) {
  // 3 devices, so that the strategy itself fits the job and only the shape is wrong.
  EXPECT_EQ(error_of([] { strategy_to_layout({3, 1}, 3).check({32, 10}, "MatMul 'fc1'"); }),
            "MatMul 'fc1': strategy (3,1) does not divide dim 0 of size 32");
  EXPECT_EQ(error_of([] { kMesh("mp", {"sp", "dp"}).check({2, 6}, "MatMul 'fc1' input 0"); }),
            "MatMul 'fc1' input 0: layout('mp', ('sp', 'dp')) does not divide dim 1 of size 6");
}

TEST(LayoutErrors, WrongNumberOfDims) {
  EXPECT_EQ(error_of([] { strategy_to_layout({2, 4}, 8).check({32, 10, 3}, "ReLU 'relu1'"); }),
            "ReLU 'relu1': strategy (2,4) has 2 dims but the tensor has 3 (shape (32, 10, 3))");
}

TEST(LayoutErrors, DeviceMatrixNeitherEqualsNorDividesTheDeviceCount) {
  EXPECT_EQ(error_of([] { strategy_to_layout({3, 1}, 8, "MatMul 'fc1'"); }),
            "MatMul 'fc1': strategy (3,1) uses 3 devices, which neither equals nor divides the 8 devices of the job");
  EXPECT_EQ(error_of([] { kMesh("mp", "None").fit_to(12, "MatMul 'fc1'"); }),
            "MatMul 'fc1' (layout('mp', 'None')): device matrix (2,2,2) has 8 devices, which neither equals nor "
            "divides the 12 devices of the job");
  EXPECT_THAT(error_of([] { strategy_to_layout({4, 0}, 8, "ReLU 'r'"); }), HasSubstr("every entry must be at least 1"));
}

TEST(LayoutErrors, UnknownAxisName) {
  EXPECT_EQ(error_of([] { kMesh("mp", {"sp", "tp"}); }),
            "layout('mp', ('sp', 'tp')) on Layout((2,2,2), ('dp', 'sp', 'mp')): unknown axis name 'tp' (the axes are "
            "'dp', 'sp', 'mp')");
}

TEST(LayoutErrors, OneAxisUsedTwiceInOneTensor) {
  EXPECT_EQ(error_of([] { kMesh("mp", {"sp", "mp"}); }),
            "layout('mp', ('sp', 'mp')) on Layout((2,2,2), ('dp', 'sp', 'mp')): axis 'mp' is used twice in one tensor");
  EXPECT_THAT(error_of([] { TensorLayout(DeviceMatrix({2, 2}), {{0}, {}}, {0}); }),
              HasSubstr("axis 0 is used twice in one tensor"));
}

TEST(LayoutErrors, BadLayoutDeclarations) {
  EXPECT_THAT(error_of([] { Layout({2, 2}, {"dp"}); }), HasSubstr("1 alias names for a device matrix of 2 axes"));
  EXPECT_THAT(error_of([] { Layout({2, 2}, {"dp", "dp"}); }), HasSubstr("alias name 'dp' is given twice"));
  EXPECT_THAT(error_of([] { Layout({2, 2}, {"dp", "None"}); }), HasSubstr("may not be named 'None'"));
  EXPECT_THAT(error_of([] { Layout({2, 0}, {"dp", "mp"}); }), HasSubstr("every dim must be at least 1"));
  EXPECT_THAT(error_of([] { kMesh({"None", "dp"}, "mp"); }), HasSubstr("\"None\" cannot be combined with axes"));
}

TEST(LayoutErrors, RedistributionBetweenDifferentDeviceCounts) {
  EXPECT_EQ(error_of([] {
              plan_redistribution(strategy_to_layout({4, 1}, 4), strategy_to_layout({2, 4}, 8), {8, 8}, DType::kF32,
                                  "tensor 'x'");
            }),
            "tensor 'x': cannot redistribute from strategy (4,1) on 4 devices to strategy (2,4) on 8 devices");
  EXPECT_EQ(error_of([] { plan_redistribution(kMesh("dp", "None"), kMesh("None", "mp"), {3, 4}, DType::kF32, "tensor 'x'"); }),
            "tensor 'x': layout('dp', 'None') does not divide dim 0 of size 3");
}

}  // namespace
}  // namespace sf
