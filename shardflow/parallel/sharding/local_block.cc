#include <shardflow/parallel/sharding/local_block.h>

#include <cstring>

namespace sf {

Tensor local_block(const Tensor& whole, const TensorLayout& layout, int64_t rank) {
  const std::vector<DimSlice> slices = layout.slice(whole.shape(), rank);
  bool rows_only = true;
  for (size_t d = 1; d < slices.size(); ++d) rows_only = rows_only && slices[d].extent == whole.dim(d);
  if (slices.empty() || (rows_only && slices[0].extent == whole.dim(0))) return whole;
  if (rows_only) return whole.rows(slices[0].offset, slices[0].offset + slices[0].extent);
  Shape shape;
  for (const DimSlice& s : slices) shape.push_back(s.extent);
  Tensor out(shape, whole.dtype());
  // Copy contiguous runs of the last dim, walking the block's other dims as an odometer.
  const int r = static_cast<int>(shape.size());
  const size_t elem = dtype_size(whole.dtype());
  const size_t run = static_cast<size_t>(shape[r - 1]) * elem;
  std::vector<int64_t> idx(r, 0);
  const auto* src = static_cast<const char*>(whole.raw());
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t k = 0, runs = numel(shape) / shape[r - 1]; k < runs; ++k) {
    int64_t at = 0;
    for (int d = 0; d < r; ++d) at = at * whole.dim(d) + slices[d].offset + idx[d];
    std::memcpy(dst + k * run, src + at * elem, run);
    for (int d = r - 2; d >= 0 && ++idx[d] == shape[d]; --d) idx[d] = 0;
  }
  return out;
}

}  // namespace sf
