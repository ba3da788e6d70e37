#include "comm/detail/blocks.h"

#include "comm/algorithm.h"
#include "comm/buffer_pool.h"

namespace sf::comm::detail {

int64_t segment_elems(DType dtype) { return kSegmentBytes / static_cast<int64_t>(dtype_size(dtype)); }

Tensor pooled_copy(const Tensor& src, int64_t off, int64_t n) {
  Tensor buf = BufferPool::global().acquire(src.dtype(), n);
  copy_elems(buf, 0, src, off, n);
  return buf;
}

}  // namespace sf::comm::detail
