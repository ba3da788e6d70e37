#include <shardflow/parallel/shard_box.h>

#include <fmt/format.h>

#include <algorithm>

#include <shardflow/core/error.h>

namespace sf {

Shape ShardBox::shape() const {
  Shape s;
  s.reserve(dims.size());
  for (const DimSlice& d : dims) s.push_back(d.extent);
  return s;
}

int64_t ShardBox::numel() const { return sf::numel(shape()); }

std::string ShardBox::str() const {
  std::vector<std::string> parts;
  for (const DimSlice& d : dims) parts.push_back(fmt::format("{}:{}", d.offset, d.offset + d.extent));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

ShardBox shard_box(const TensorLayout& layout, const Shape& global, int64_t rank, std::string_view what) {
  SF_ENFORCE(!layout.is_partial(), InvalidArgument,
             "{}: layout {} is partial, its ranks hold shares of a pending sum; only values at rest (split or "
             "replicated) have a block to save or load",
             what, layout.spec());
  const int64_t ranks = layout.mesh().device_count();
  SF_ENFORCE(rank >= 0 && rank < ranks, InvalidArgument, "{}: rank {} is outside the {} ranks of layout {}", what,
             rank, ranks, layout.spec());
  layout.check(global, what);
  return ShardBox{layout.slice(global, rank)};
}

ShardBox intersect(const ShardBox& a, const ShardBox& b) {
  SF_ENFORCE(a.dims.size() == b.dims.size(), ShapeError, "box intersection: box {} has {} dims but box {} has {}",
             a.str(), a.dims.size(), b.str(), b.dims.size());
  ShardBox out;
  out.dims.resize(a.dims.size());
  for (size_t d = 0; d < a.dims.size(); ++d) {
    const int64_t begin = std::max(a.dims[d].offset, b.dims[d].offset);
    const int64_t end = std::min(a.dims[d].offset + a.dims[d].extent, b.dims[d].offset + b.dims[d].extent);
    out.dims[d] = DimSlice{begin, std::max<int64_t>(0, end - begin)};
  }
  return out;
}

}  // namespace sf
