#include <shardflow/core/tensor.h>

#include <gtest/gtest.h>

namespace sf {
namespace {

TEST(Tensor, RowsIsAViewOnTheSameStorage) {
  Tensor t = Tensor::from_vector({3, 2}, std::vector<float>{0, 1, 2, 3, 4, 5});
  Tensor r = t.rows(1, 3);
  EXPECT_TRUE(r.shares_storage(t));
  EXPECT_EQ(r.shape(), (Shape{2, 2}));
  EXPECT_EQ(r.f32()[0], 2.0f);
  r.f32()[0] = 42.0f;
  EXPECT_EQ(t.f32()[2], 42.0f);
}

TEST(Tensor, ViewInfersMinusOneAndRefusesBadShapes) {
  Tensor t({4, 6});
  EXPECT_EQ(t.view({-1, 3}).shape(), (Shape{8, 3}));
  EXPECT_THROW(t.view({5, -1}), ShapeError);
  EXPECT_THROW(t.view({7, 3}), ShapeError);
}

TEST(Tensor, CloneIsDeepAndBitwiseEqual) {
  Tensor t = Tensor::full({5}, 1.5f);
  Tensor c = t.clone();
  EXPECT_FALSE(c.shares_storage(t));
  EXPECT_TRUE(bitwise_equal(t, c));
  c.f32()[0] = 0;
  EXPECT_FALSE(bitwise_equal(t, c));
}

TEST(Tensor, WrongDtypeAccessNamesBothTypes) {
  Tensor t({2}, DType::kI32);
  try {
    t.f32();
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("i32(2,)"), std::string::npos) << e.what();
  }
}

TEST(Tensor, StorageIs64ByteAligned) {
  Tensor t({3, 7});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

TEST(Shape, NumelRefusesOverflow) {
  EXPECT_EQ(numel({}), 1);
  EXPECT_EQ(numel({3, 0, 5}), 0);
  EXPECT_THROW(numel({int64_t{1} << 62, 4}), ShapeError);
}

}  // namespace
}  // namespace sf
