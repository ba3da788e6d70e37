// Tests for BufferPool (comm/buffer_pool.h): reuse of released buffers, reader references,
// buffers cut from huge-page blocks, adopted buffers, that foreign tensors are ignored, and
// buffers readied ahead of the messages that will take them.
#include <shardflow/comm/buffer_pool.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

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

TEST(BufferPool, MiddleClassesAreCutFromHugePageBlocks) {
  // 64 KiB .. 1 MiB buffers come from 2 MiB blocks that the storage cache maps 2 MiB-aligned
  // as huge pages, so each starts at a multiple of its own size, which an ordinary allocation
  // does not give. One more than a block holds is taken, so a second block is cut too.
  BufferPool& pool = BufferPool::global();
  for (size_t cls = BufferPool::kCarveMinBytes; cls < BufferPool::kCarveBlockBytes; cls *= 2) {
    std::vector<Tensor> held;
    for (size_t k = 0; k < BufferPool::kCarveBlockBytes / cls + 1; ++k) {
      held.push_back(pool.acquire(DType::kI32, static_cast<int64_t>(cls / 4)));
      EXPECT_EQ(reinterpret_cast<uintptr_t>(held.back().raw()) % cls, 0u) << cls << " bytes, buffer " << k;
    }
    for (const Tensor& t : held) pool.release(t);
  }
  // Outside the range, classes are plain allocations.
  Tensor small = pool.acquire(DType::kI32, 1024);
  EXPECT_EQ(small.numel(), 1024);
  pool.release(small);
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

TEST(BufferPool, AnAdoptedBufferIsTheKeepersAndNeverHandedOutAgain) {
  BufferPool& pool = BufferPool::global();
  const size_t before = pool.outstanding();
  Tensor a = pool.acquire(DType::kF32, 3000);
  a.f32()[0] = 42.0f;
  const Tensor kept = pool.adopt(a);  // the only reference: the same memory, forgotten by the pool
  EXPECT_EQ(kept.raw(), a.raw());
  EXPECT_EQ(pool.outstanding(), before);
  pool.release(kept);  // a sender's release of it now does nothing
  for (int k = 0; k < 3; ++k) {
    Tensor other = pool.acquire(DType::kF32, 3000);
    EXPECT_NE(other.raw(), kept.raw()) << "an adopted buffer was handed out again";
    pool.release(other);
  }
  EXPECT_EQ(kept.f32()[0], 42.0f);
  // With another reader left, the keeper gets a copy and gives its reference back.
  Tensor b = pool.acquire(DType::kF32, 3000);
  b.f32()[0] = 7.0f;
  pool.retain(b, 1);
  const Tensor copy = pool.adopt(b);
  EXPECT_NE(copy.raw(), b.raw());
  EXPECT_EQ(copy.f32()[0], 7.0f);
  EXPECT_EQ(pool.outstanding(), before + 1);  // the other reader's
  pool.release(b);
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

TEST(BufferPool, PrefaultReadiesABufferPerMessageThatTheReceivesThenTake) {
  BufferPool& pool = BufferPool::global();
  const size_t free_before = pool.free_bytes(), out_before = pool.outstanding();
  // Two messages of one class need two buffers (32 MiB each); 40 MiB and 2 bytes round up to
  // whole f32 elements, in a 64 MiB buffer. Classes no other test of this binary uses.
  pool.prefault({size_t{24} << 20, size_t{24} << 20, (size_t{40} << 20) + 2, 0});
  EXPECT_EQ(pool.outstanding(), out_before);
  EXPECT_EQ(pool.free_bytes(), free_before + (size_t{128} << 20));
  Tensor a = pool.acquire(DType::kF32, (int64_t{24} << 20) / 4);
  Tensor b = pool.acquire(DType::kF32, (int64_t{24} << 20) / 4);
  EXPECT_NE(a.raw(), b.raw());
  EXPECT_EQ(pool.free_bytes(), free_before + (size_t{64} << 20));  // both taken from the readied ones
  pool.release(a);
  pool.release(b);
}

}  // namespace
}  // namespace sf::comm
