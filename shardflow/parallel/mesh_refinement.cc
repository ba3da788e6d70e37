#include <shardflow/parallel/mesh_refinement.h>

#include <algorithm>
#include <set>

#include <shardflow/core/error.h>

namespace sf {

namespace {
// The suffix products of the dims, 1 and the device count included: an axis spans the range
// between two consecutive ones.
std::set<int64_t> boundaries(const DeviceMatrix& m) {
  std::set<int64_t> b{1};
  int64_t p = 1;
  for (int a = m.axes() - 1; a >= 0; --a) b.insert(p *= m.dim(a));
  return b;
}

// For each axis of `coarse`, the axes of `fine` inside it, major first.
std::vector<std::vector<int>> sub_axes(const DeviceMatrix& fine, const DeviceMatrix& coarse) {
  std::vector<int64_t> fine_stride(fine.axes());
  int64_t p = 1;
  for (int a = fine.axes() - 1; a >= 0; --a) {
    fine_stride[a] = p;
    p *= fine.dim(a);
  }
  std::vector<std::vector<int>> out(coarse.axes());
  int64_t stride = 1;
  for (int a = coarse.axes() - 1; a >= 0; --a) {
    const int64_t end = stride * coarse.dim(a);
    for (int f = 0; f < fine.axes(); ++f)
      if (fine.dim(f) > 1 && fine_stride[f] >= stride && fine_stride[f] < end) out[a].push_back(f);
    stride = end;
  }
  return out;
}
}  // namespace

std::optional<DeviceMatrix> common_refinement(const DeviceMatrix& a, const DeviceMatrix& b) {
  if (a.device_count() != b.device_count()) return std::nullopt;
  std::set<int64_t> all = boundaries(a);
  all.merge(boundaries(b));
  std::vector<int64_t> dims;
  int64_t prev = 1;
  for (int64_t v : all) {
    if (v == 1) continue;
    if (v % prev != 0) return std::nullopt;
    dims.push_back(v / prev);
    prev = v;
  }
  std::reverse(dims.begin(), dims.end());
  return DeviceMatrix(std::move(dims));
}

bool refines(const DeviceMatrix& fine, const DeviceMatrix& coarse) {
  if (fine.device_count() != coarse.device_count()) return false;
  const std::set<int64_t> f = boundaries(fine), c = boundaries(coarse);
  return std::includes(f.begin(), f.end(), c.begin(), c.end());
}

TensorLayout refine(const TensorLayout& layout, const DeviceMatrix& fine) {
  SF_ENFORCE(refines(fine, layout.mesh()), InvalidArgument, "refine {}: device matrix {} does not refine {}",
             layout.str(), fine.str(), layout.mesh().str());
  const std::vector<std::vector<int>> sub = sub_axes(fine, layout.mesh());
  TensorLayout::TensorMap map;
  for (const auto& axes : layout.tensor_map()) {
    map.emplace_back();
    for (int a : axes) map.back().insert(map.back().end(), sub[a].begin(), sub[a].end());
  }
  std::vector<int> partial;
  for (int a : layout.partial()) partial.insert(partial.end(), sub[a].begin(), sub[a].end());
  return TensorLayout(fine, std::move(map), std::move(partial));
}

}  // namespace sf
