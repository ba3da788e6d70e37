// Walking an n-d tensor row by row with two strided offsets, shared by the broadcasting
// and reducing kernels. Index arrays have a fixed size so that kernels never allocate.
#pragma once

#include <array>
#include <cstdint>

#include <shardflow/core/shape.h>

namespace sf {

constexpr size_t kMaxRank = 8;
using Strides = std::array<int64_t, kMaxRank>;

// Calls row(offset_a, offset_b) for each innermost row of `shape`, row-major; a step along dim
// d moves the offsets by sa[d] and sb[d]. A scalar or 1-D shape is a single row.
template <class F>
void for_each_row(const Shape& shape, const Strides& sa, const Strides& sb, F&& row) {
  if (numel(shape) == 0) return;
  const int r = static_cast<int>(shape.size());
  Strides idx{};
  int64_t oa = 0, ob = 0;
  for (int d = 0; d >= 0;) {
    row(oa, ob);
    for (d = r - 2; d >= 0; --d) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < shape[d]) break;
      oa -= sa[d] * shape[d];
      ob -= sb[d] * shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace sf
