#include <shardflow/comm/detail/blocks.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <shardflow/comm/algorithm.h>
#include <shardflow/comm/buffer_pool.h>

namespace sf::comm::detail {

int64_t segment_elems(DType dtype, int64_t bytes) {
  return std::max<int64_t>(1, bytes / static_cast<int64_t>(dtype_size(dtype)));
}

Tensor pooled_copy(const Tensor& src, int64_t off, int64_t n) {
  Tensor buf = BufferPool::global().acquire(src.dtype(), n);
  copy_elems(buf, 0, src, off, n);
  return buf;
}

void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__) && (defined(__AVX512F__) || defined(__AVX2__))
#if defined(__AVX512F__)
  constexpr size_t kLine = 64;
#else
  constexpr size_t kLine = 32;
#endif
  auto* d = static_cast<std::byte*>(dst);
  auto* s = static_cast<const std::byte*>(src);
  const size_t head = std::min(bytes, (kLine - reinterpret_cast<uintptr_t>(d) % kLine) % kLine);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + kLine <= bytes; i += kLine) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
#else
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
#endif
  }
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace sf::comm::detail
