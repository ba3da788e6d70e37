#include <shardflow/train/checkpoint/sharded_tensor.h>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf::ckpt {

std::pair<TensorLayout, int> block_layout(const Shape& global, const Shape& block, const std::vector<int64_t>& offset,
                                          const std::string& what) {
  SF_ENFORCE(block.size() == global.size() && (offset.empty() || offset.size() == global.size()), ShapeError,
             "{}: block {} at offset {} does not fit the tensor's shape {}", what, brief_shape(block),
             brief_ints(offset), brief_shape(global));
  // One mesh axis per dim (a scalar gets one axis of size 1: a mesh has at least one).
  std::vector<int64_t> mesh;
  TensorLayout::TensorMap map;
  int64_t rank = 0;
  for (size_t d = 0; d < global.size(); ++d) {
    const int64_t at = offset.empty() ? 0 : offset[d];
    const bool even = block[d] > 0 ? global[d] % block[d] == 0 && at % block[d] == 0 && at < global[d]
                                   : global[d] == 0 && at == 0;
    SF_ENFORCE(even, ShapeError, "{}: block {} at offset {} does not tile the tensor's shape {} evenly", what,
               brief_shape(block), brief_ints(offset), brief_shape(global));
    const int64_t splits = block[d] > 0 ? global[d] / block[d] : 1;
    mesh.push_back(splits);
    map.push_back({static_cast<int>(d)});
    rank = rank * splits + (block[d] > 0 ? at / block[d] : 0);
  }
  if (mesh.empty()) mesh.push_back(1);
  return {TensorLayout(DeviceMatrix(mesh), std::move(map)), static_cast<int>(rank)};
}

ShardedTensor ShardedTensor::whole(std::string name, Tensor t) {
  ShardedTensor s;
  s.name = std::move(name);
  s.global = t.shape();
  s.layout = TensorLayout::replicated(DeviceMatrix({1}), t.rank());
  s.layout_rank = 0;
  s.local = std::move(t);
  return s;
}

ShardedTensor ShardedTensor::block(std::string name, Tensor t, Shape global, const std::vector<int64_t>& offset) {
  ShardedTensor s;
  auto [layout, rank] = block_layout(global, t.shape(), offset, fmt::format("tensor '{}'", brief_text(name, 60)));
  s.name = std::move(name);
  s.global = std::move(global);
  s.layout = std::move(layout);
  s.layout_rank = rank;
  s.local = std::move(t);
  return s;
}

}  // namespace sf::ckpt
