#include <shardflow/train/gather_parameters.h>

#include <shardflow/comm/all_gather.h>
#include <shardflow/comm/rank_context.h>

namespace sf {

namespace {

// Copies `block` (row-major, of shape `block_shape`) into `whole` at `offset`, one innermost
// row at a time.
void place(const float* block, const Shape& block_shape, const std::vector<int64_t>& offset, Tensor& whole) {
  const Shape& shape = whole.shape();
  const int dims = static_cast<int>(shape.size());
  const int64_t row = dims == 0 ? 1 : block_shape[dims - 1];
  const int64_t rows = row == 0 ? 0 : numel(block_shape) / row;
  for (int64_t i = 0; i < rows; ++i) {
    // Row i's index in the block over dims 0..dims-2 (last fastest), shifted by the offset.
    int64_t rest = i, dst = dims == 0 ? 0 : offset[dims - 1], stride = dims == 0 ? 1 : shape[dims - 1];
    for (int d = dims - 2; d >= 0; --d) {
      dst += (offset[d] + rest % block_shape[d]) * stride;
      rest /= block_shape[d];
      stride *= shape[d];
    }
    std::copy(block + i * row, block + (i + 1) * row, whole.f32() + dst);
  }
}

}  // namespace

std::vector<Tensor> gather_parameters(const ParameterList& params) {
  std::vector<Tensor> whole;
  const int ranks = comm::current_rank().size();
  for (const Parameter& p : params) {
    if (!p.sharded()) {
      whole.push_back(p.value());
      continue;
    }
    const Tensor& block = p.value();
    // Every rank's block and offset, in rank order: blocks of one parameter have one shape.
    const Tensor blocks = comm::all_gather(block.view({1, block.numel()}), {});
    Tensor offset({1, static_cast<int64_t>(p.offset().size())});
    for (size_t d = 0; d < p.offset().size(); ++d) offset.f32()[d] = static_cast<float>(p.offset()[d]);
    const Tensor offsets = comm::all_gather(offset, {});
    Tensor out(p.shape());
    for (int r = 0; r < ranks; ++r) {
      std::vector<int64_t> at;
      for (int64_t d = 0; d < offset.numel(); ++d) at.push_back(static_cast<int64_t>(offsets.f32()[r * offset.numel() + d]));
      place(blocks.f32() + r * block.numel(), block.shape(), at, out);
    }
    whole.push_back(out);
  }
  return whole;
}

}  // namespace sf
