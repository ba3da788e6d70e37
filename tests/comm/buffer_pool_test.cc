// Tests for BufferPool (comm/buffer_pool.h): reuse of released buffers, reader references,
// and that foreign tensors are ignored.
#include "comm/buffer_pool.h"

#include <gtest/gtest.h>

namespace sf::comm {
namespace {

TEST(BufferPool, ReleasedBufferIsReusedForTheSameClass) {
  BufferPool& pool = BufferPool::global();
  const size_t before = pool.outstanding();
  Tensor a = pool.acquire(DType::kF32, 1000);
  EXPECT_EQ(a.numel(), 1000);
  EXPECT_EQ(a.dtype(), DType::kF32);
  EXPECT_EQ(pool.outstanding(), before + 1);
  const void* p = a.raw();
  pool.release(a);
  EXPECT_EQ(pool.outstanding(), before);
  Tensor b = pool.acquire(DType::kF32, 900);  // same power-of-two class (4 KiB)
  EXPECT_EQ(b.raw(), p);
  EXPECT_EQ(b.numel(), 900);
  pool.release(b);
}

TEST(BufferPool, BufferStaysOutUntilEveryReaderReleases) {
  BufferPool& pool = BufferPool::global();
  const size_t before = pool.outstanding();
  Tensor a = pool.acquire(DType::kI32, 5000);
  pool.retain(a, 2);  // three readers in all
  pool.release(a);
  pool.release(a);
  EXPECT_EQ(pool.outstanding(), before + 1);
  Tensor other = pool.acquire(DType::kI32, 5000);
  EXPECT_NE(other.raw(), a.raw()) << "a buffer with a reader left was handed out again";
  pool.release(a);
  pool.release(other);
  EXPECT_EQ(pool.outstanding(), before);
}

TEST(BufferPool, ForeignAndEmptyTensorsAreIgnored) {
  BufferPool& pool = BufferPool::global();
  const size_t before = pool.outstanding();
  Tensor mine = Tensor::full({10}, 1.0f);
  pool.release(mine);
  pool.retain(mine, 3);
  Tensor empty = pool.acquire(DType::kF32, 0);
  EXPECT_EQ(empty.numel(), 0);
  pool.release(empty);
  EXPECT_EQ(pool.outstanding(), before);
  EXPECT_EQ(mine.to_vector()[0], 1.0f);  // untouched
}

}  // namespace
}  // namespace sf::comm
