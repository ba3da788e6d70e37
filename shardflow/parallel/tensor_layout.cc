#include <shardflow/parallel/tensor_layout.h>

#include <fmt/format.h>

#include <algorithm>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

namespace sf {

TensorLayout::TensorLayout(DeviceMatrix mesh, TensorMap tensor_map, std::vector<int> partial,
                           std::vector<std::string> axis_names, std::string spec)
    : mesh_(std::move(mesh)),
      map_(std::move(tensor_map)),
      partial_(std::move(partial)),
      names_(std::move(axis_names)),
      spec_(std::move(spec)) {
  std::sort(partial_.begin(), partial_.end());
  SF_ENFORCE(names_.empty() || static_cast<int>(names_.size()) == mesh_.axes(), InvalidArgument,
             "tensor layout on {}: {} axis names for {} axes", mesh_.str(), names_.size(), mesh_.axes());
  std::vector<bool> used(mesh_.axes(), false);
  const auto use = [&](int a) {
    SF_ENFORCE(a >= 0 && a < mesh_.axes(), InvalidArgument, "tensor layout on {}: axis {} is out of range",
               mesh_.str(), a);
    SF_ENFORCE(!used[a], InvalidArgument, "tensor layout {}: axis {} is used twice in one tensor", str(),
               axis_str(a));
    used[a] = true;
  };
  for (const auto& axes : map_)
    for (int a : axes) use(a);
  for (int a : partial_) use(a);
}

TensorLayout TensorLayout::replicated(const DeviceMatrix& mesh, int dims) { return TensorLayout(mesh, TensorMap(dims)); }

std::vector<int> TensorLayout::replicated_axes() const {
  std::vector<bool> used(mesh_.axes(), false);
  for (const auto& axes : map_)
    for (int a : axes) used[a] = true;
  for (int a : partial_) used[a] = true;
  std::vector<int> out;
  for (int a = 0; a < mesh_.axes(); ++a)
    if (!used[a]) out.push_back(a);
  return out;
}

std::vector<DimSlice> TensorLayout::slice(const Shape& global, int64_t rank) const {
  check(global, "slice");
  std::vector<DimSlice> out(map_.size());
  for (int d = 0; d < dims(); ++d) {
    out[d].extent = global[d] / splits(d);
    out[d].offset = block(rank, d) * out[d].extent;
  }
  return out;
}

Shape TensorLayout::local_shape(const Shape& global) const {
  check(global, "local shape");
  Shape s = global;
  for (int d = 0; d < dims(); ++d) s[d] /= splits(d);
  return s;
}

void TensorLayout::check(const Shape& global, std::string_view what) const {
  SF_ENFORCE(static_cast<int>(global.size()) == dims(), ShapeError,
             "{}: {} has {} dims but the tensor has {} (shape {})", what, spec(), dims(), global.size(),
             brief_shape(global));
  for (int d = 0; d < dims(); ++d)
    SF_ENFORCE(global[d] % splits(d) == 0, ShapeError, "{}: {} does not divide dim {} of size {}", what, spec(), d,
               global[d]);
}

TensorLayout TensorLayout::fit_to(int64_t device_count, std::string_view what) const {
  if (mesh_.device_count() == device_count) return *this;
  const std::string context = fmt::format("{} ({})", what, spec());
  DeviceMatrix mesh = mesh_.fit_to(device_count, context);
  std::vector<std::string> names = names_;
  if (!names.empty()) names.push_back("repeat");
  return TensorLayout(std::move(mesh), map_, partial_, std::move(names), spec_);
}

std::string TensorLayout::axis_str(int axis) const {
  return names_.empty() ? std::to_string(axis) : fmt::format("'{}'", names_.at(axis));
}

std::string TensorLayout::str() const {
  std::vector<std::string> dims;
  for (const auto& axes : map_) {
    std::vector<std::string> parts;
    for (int a : axes) parts.push_back(axis_str(a));
    if (parts.empty())
      dims.push_back("None");
    else if (parts.size() == 1)
      dims.push_back(parts[0]);
    else
      dims.push_back(fmt::format("({})", fmt::join(parts, ", ")));
  }
  std::string out = fmt::format("({}) on {}", fmt::join(dims, ", "), mesh_.str());
  if (!partial_.empty()) {
    std::vector<std::string> parts;
    for (int a : partial_) parts.push_back(axis_str(a));
    out += fmt::format(" partial ({})", fmt::join(parts, ", "));
  }
  return out;
}

}  // namespace sf
