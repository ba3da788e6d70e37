#include <shardflow/core/storage_cache.h>

#include <gtest/gtest.h>

#include <algorithm>

#include <shardflow/core/tensor.h>

namespace sf {
namespace {

using detail::StorageCache;

TEST(StorageCache, ReusesAFreedBlockOfTheSameClass) {
  if (StorageCache::global().limit_bytes() == 0) GTEST_SKIP() << "SF_TENSOR_CACHE_MB=0";
  const void* first;
  {
    Tensor t({1 << 18});  // 1 MiB
    first = t.raw();
  }
  Tensor again({1 << 18});
  EXPECT_EQ(again.raw(), first);
}

TEST(StorageCache, AReusedBlockIsZeroedForZerosButNotForEmpty) {
  for (int64_t n : {int64_t{1} << 16, int64_t{3} << 20}) {  // a heap class and a huge-page class
    {
      Tensor dirty = Tensor::full({n}, 7.0f);
    }
    Tensor z({n});
    const float* p = z.f32();
    EXPECT_TRUE(std::all_of(p, p + n, [](float v) { return v == 0.0f; })) << n << " floats";
    Tensor e = Tensor::empty({n});
    EXPECT_EQ(e.shape(), (Shape{n}));
    EXPECT_EQ(e.numel(), n);
  }
}

TEST(StorageCache, SmallBlocksAreNotCached) {
  StorageCache& cache = StorageCache::global();
  cache.clear();
  {
    Tensor small({1000});
  }
  EXPECT_EQ(cache.cached_bytes(), 0u);
  {
    Tensor big({1 << 16});  // 256 KiB
  }
  EXPECT_EQ(cache.cached_bytes(), cache.limit_bytes() ? size_t{256} << 10 : 0u);
  cache.clear();
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

TEST(StorageCache, NeverHoldsMoreThanItsLimit) {
  StorageCache& cache = StorageCache::global();
  cache.clear();
  const size_t limit = cache.limit_bytes();
  if (limit == 0) GTEST_SKIP() << "SF_TENSOR_CACHE_MB=0";
  // Blocks of many classes whose total is well over the limit, all freed together.
  std::vector<Tensor> held;
  size_t total = 0;
  for (int64_t mib = 2; total <= 2 * limit; mib += 2) {
    held.emplace_back(Shape{mib << 18});
    total += static_cast<size_t>(mib) << 20;
  }
  held.clear();
  EXPECT_LE(cache.cached_bytes(), limit);
  EXPECT_GT(cache.cached_bytes(), 0u);
  cache.clear();
}

}  // namespace
}  // namespace sf
