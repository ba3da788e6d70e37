// The parallel context: defaults, set/get/reset, MindSpore's mode names, and a negative bucket
// size refused naming the field.
#include <shardflow/parallel/context.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/core/error.h>

namespace sf {
namespace {

TEST(AutoParallelContext, DefaultsAreStandAloneWithoutMean) {
  reset_auto_parallel_context();
  const AutoParallelContext c = get_auto_parallel_context();
  EXPECT_EQ(c.parallel_mode, ParallelMode::kStandAlone);
  EXPECT_FALSE(c.gradients_mean);
  EXPECT_EQ(c.bucket_bytes, kDefaultBucketBytes);
}

TEST(AutoParallelContext, SetThenGetThenReset) {
  set_auto_parallel_context({.parallel_mode = ParallelMode::kDataParallel, .gradients_mean = true, .bucket_bytes = 0});
  AutoParallelContext c = get_auto_parallel_context();
  EXPECT_EQ(c.parallel_mode, ParallelMode::kDataParallel);
  EXPECT_TRUE(c.gradients_mean);
  EXPECT_EQ(c.bucket_bytes, 0);
  reset_auto_parallel_context();
  EXPECT_EQ(get_auto_parallel_context().parallel_mode, ParallelMode::kStandAlone);
}

TEST(AutoParallelContext, NegativeBucketBytesIsRefused) {
  EXPECT_THAT([] { set_auto_parallel_context({.bucket_bytes = -1}); },
              ::testing::ThrowsMessage<InvalidArgument>(::testing::HasSubstr("bucket_bytes must be >= 0 (0 = one bucket per gradient), got -1")));
}

TEST(ParallelMode, MindSporeNamesAndWhichModesReduceGradients) {
  EXPECT_EQ(parallel_mode_name(ParallelMode::kStandAlone), "stand_alone");
  EXPECT_EQ(parallel_mode_name(ParallelMode::kDataParallel), "data_parallel");
  EXPECT_EQ(parallel_mode_name(ParallelMode::kHybridParallel), "hybrid_parallel");
  EXPECT_EQ(parallel_mode_name(ParallelMode::kSemiAutoParallel), "semi_auto_parallel");
  EXPECT_EQ(parallel_mode_name(ParallelMode::kAutoParallel), "auto_parallel");
  EXPECT_TRUE(reduces_gradients(ParallelMode::kDataParallel));
  EXPECT_TRUE(reduces_gradients(ParallelMode::kHybridParallel));
  EXPECT_FALSE(reduces_gradients(ParallelMode::kStandAlone));
  EXPECT_FALSE(reduces_gradients(ParallelMode::kSemiAutoParallel));
}

}  // namespace
}  // namespace sf
