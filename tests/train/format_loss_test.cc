#include <gtest/gtest.h>

#include <shardflow/train/callback.h>

namespace sf {
namespace {

// Python's repr of the f32 loss widened to a double, as MindSpore's LossMonitor prints it.
TEST(FormatLoss, PrintsLikePython) {
  EXPECT_EQ(format_loss(2.241283893585205f), "2.241283893585205");
  EXPECT_EQ(format_loss(1.0f), "1.0");
  EXPECT_EQ(format_loss(0.0f), "0.0");
  EXPECT_EQ(format_loss(1e-5f), "9.999999747378752e-06");
}

}  // namespace
}  // namespace sf
