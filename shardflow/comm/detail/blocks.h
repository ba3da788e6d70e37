// Element ranges for the block and segment arithmetic of the collective algorithms, and
// copies between flat element ranges of tensors.
//
// Threading: pure functions; the copies write only the destination range.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::comm::detail {

struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Block j of `count` elements split into n nearly equal blocks (the first count % n blocks
// one element larger).
inline Range block_range(int64_t count, int n, int j) {
  const int64_t base = count / n, extra = count % n;
  const int64_t begin = j * base + (j < extra ? j : extra);
  return {begin, begin + base + (j < extra ? 1 : 0)};
}

// All n blocks of `count` elements, as block_range gives them.
inline std::vector<Range> block_ranges(int64_t count, int n) {
  std::vector<Range> out;
  for (int j = 0; j < n; ++j) out.push_back(block_range(count, n, j));
  return out;
}

// Segment k (of `seg` elements) of range r, clipped to r; empty past its end.
inline Range segment_of(Range r, int64_t seg, int64_t k) {
  const int64_t b = std::min(r.end, r.begin + k * seg);
  return {b, std::min(r.end, b + seg)};
}

// Segments needed to cover the largest of `blocks`; at least 1.
inline int64_t segment_count(const std::vector<Range>& blocks, int64_t seg) {
  int64_t largest = 0;
  for (const Range& b : blocks) largest = std::max(largest, b.size());
  return std::max<int64_t>(1, (largest + seg - 1) / seg);
}

// Segment length in elements of `dtype` for segments of `bytes` (at least one element).
int64_t segment_elems(DType dtype, int64_t bytes);

// Copies n elements: dst[dst_off ..) = src[src_off ..). Same dtype.
inline void copy_elems(Tensor& dst, int64_t dst_off, const Tensor& src, int64_t src_off, int64_t n) {
  if (n <= 0) return;
  const size_t w = dtype_size(dst.dtype());
  std::memcpy(static_cast<std::byte*>(dst.raw()) + dst_off * w,
              static_cast<const std::byte*>(src.raw()) + src_off * w, static_cast<size_t>(n) * w);
}

// A pooled buffer (one reader reference) holding src[off, off + n).
Tensor pooled_copy(const Tensor& src, int64_t off, int64_t n);

// Copies `bytes` into memory nobody will read soon (a fresh output that does not fit in
// cache): with non-temporal stores, which skip reading each destination line first. Call
// stream_fence() before telling another thread the bytes are there.
void stream_copy(void* dst, const void* src, size_t bytes);
void stream_fence();

// Copies at or above this many bytes go to fresh outputs with stream_copy; below, the data is
// likely read again soon and regular stores keep it in cache.
inline constexpr size_t kStreamBytes = size_t{256} << 10;

}  // namespace sf::comm::detail
