#include <shardflow/data/transforms.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <shardflow/data/dataset.h>

namespace sf::dataset {
namespace {

using ::testing::HasSubstr;

// One HWC row of shape (2, 2, 2) holding 0..7, so x[h][w][c] = (h * 2 + w) * 2 + c.
Tensor tiny_hwc() { return Tensor::from_vector({1, 2, 2, 2}, std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}); }

TEST(Transforms, RescaleNormalizeHwc2chwOnAKnownTensor) {
  Dataset ds = Dataset::from_columns({"image"}, {tiny_hwc()});
  ds = ds.map({Rescale(0.5f, 1.0f), Normalize({1.0f, 2.0f}, {2.0f, 0.5f}), HWC2CHW()}, "image");
  const Tensor& out = ds.column("image");
  EXPECT_EQ(out.shape(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(out.dtype(), DType::kF32);
  // Rescale: 1 1.5 2 2.5 3 3.5 4 4.5; channel 0 (1 2 3 4 - 1) / 2, channel 1 (1.5 2.5 3.5 4.5 - 2) / 0.5;
  // then channel-major.
  EXPECT_EQ(out.to_vector(), (std::vector<float>{0, 0.5f, 1, 1.5f, -1, 1, 3, 5}));
}

TEST(Transforms, MapLeavesTheSourceColumnUntouched) {
  Tensor src = tiny_hwc();
  Dataset a = Dataset::from_columns({"image"}, {src});
  const std::vector<float> before = src.to_vector();
  // The second transform may reuse the first one's fresh output, never the source.
  Dataset b = a.map({Rescale(2.0f, 0.0f), Rescale(1.0f, 1.0f)}, "image");
  EXPECT_EQ(a.column("image").to_vector(), before);
  EXPECT_EQ(src.to_vector(), before);
  EXPECT_EQ(b.column("image").f32()[7], 15.0f);
  EXPECT_FALSE(b.column("image").shares_storage(src));
}

TEST(Transforms, SeedPipelineOnOneChannel) {
  Tensor img = Tensor::from_vector({2, 2, 2, 1}, std::vector<float>{0, 51, 102, 255, 1, 2, 3, 4});
  Tensor out = img;
  for (const Transform& t : std::vector<Transform>{Rescale(1.0f / 255, 0), Normalize({0.1307f}, {0.3081f}), HWC2CHW()})
    out = apply_transform(t, out, "image");
  EXPECT_EQ(out.shape(), (Shape{2, 1, 2, 2}));
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(out.f32()[i], (img.f32()[i] * (1.0f / 255) - 0.1307f) / 0.3081f) << i;
}

TEST(Transforms, Hwc2chwOfOneChannelIsAReshapeWithoutCopy) {
  Tensor img({3, 4, 5, 1});
  Tensor out = apply_transform(HWC2CHW(), img, "image");
  EXPECT_EQ(out.shape(), (Shape{3, 1, 4, 5}));
  EXPECT_TRUE(out.shares_storage(img));
}

TEST(Transforms, Hwc2chwTransposesIntegersToo) {
  Tensor img = Tensor::from_vector({1, 1, 2, 3}, std::vector<int32_t>{1, 2, 3, 4, 5, 6});
  Tensor out = apply_transform(HWC2CHW(), img, "mask");
  EXPECT_EQ(out.shape(), (Shape{1, 3, 1, 2}));
  EXPECT_EQ(out.to_vector(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Transforms, TypeCastBothWays) {
  Tensor f = Tensor::from_vector({4}, std::vector<float>{1.9f, -1.9f, 0, 7});
  Tensor i = apply_transform(TypeCast(DType::kI32), f, "label");
  EXPECT_EQ(i.dtype(), DType::kI32);
  EXPECT_EQ(std::vector<int32_t>(i.i32(), i.i32() + 4), (std::vector<int32_t>{1, -1, 0, 7}));
  Tensor back = apply_transform(TypeCast(DType::kF32), i, "label");
  EXPECT_EQ(back.to_vector(), (std::vector<float>{1, -1, 0, 7}));
  EXPECT_TRUE(apply_transform(TypeCast(DType::kI32), i, "label").shares_storage(i));
}

TEST(Transforms, RescaleOfIntegersGivesFloats) {
  Tensor i = Tensor::from_vector({2}, std::vector<int32_t>{10, 20});
  Tensor f = apply_transform(Rescale(0.1f, 1.0f), i, "x");
  EXPECT_EQ(f.dtype(), DType::kF32);
  EXPECT_FLOAT_EQ(f.f32()[1], 3.0f);
}

TEST(Transforms, ShapeErrorsNameTheColumnAndTransform) {
  try {
    apply_transform(Normalize({0.5f}, {0.5f}), tiny_hwc(), "image");
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Normalize(mean=[0.5], std=[0.5]) on column 'image': 2 channels"));
  }
  try {
    apply_transform(HWC2CHW(), Tensor({4, 784}), "flat");
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("HWC2CHW on column 'flat'"));
  }
  EXPECT_THROW(apply_transform(Normalize({0.5f}, {0.0f}), Tensor({1, 2, 2}), "image"), InvalidArgument);
}

TEST(Transforms, DescribeReadsLikeMindSpore) {
  EXPECT_EQ(describe(Rescale(0.5f, 0)), "Rescale(0.5, 0)");
  EXPECT_EQ(describe(HWC2CHW()), "HWC2CHW()");
  EXPECT_EQ(describe(TypeCast(DType::kI32)), "TypeCast(i32)");
  EXPECT_EQ(describe(Normalize({0.1f, 0.2f}, {1, 2})), "Normalize(mean=[0.1, 0.2], std=[1, 2])");
}

}  // namespace
}  // namespace sf::dataset
