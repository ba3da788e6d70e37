/// @file
/// Layout: MindSpore's `Layout(device_matrix, alias_name)`, a device matrix whose axes have
/// names, called with one entry per tensor dim to give that tensor's TensorLayout:
///
/// @code
///   sf::Layout layout({2, 2, 2}, {"dp", "sp", "mp"});
///   TensorLayout a = layout("mp", {"sp", "dp"});   // dim 0 over mp, dim 1 over sp then dp
///   TensorLayout w = layout({"sp", "dp"}, "None"); // "None": the dim is not split
/// @endcode
///
/// A dim over several axes is split by their product, the first-named axis major. The device
/// matrix may have fewer devices than the job if its product divides the device count
/// (TensorLayout::fit_to adds the repeat axis). Errors name the layout and the rule: an unknown
/// axis name, one axis used twice in one tensor, duplicate or reserved axis names.
///
/// Threading: a plain value.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <shardflow/parallel/device_matrix.h>
#include <shardflow/parallel/tensor_layout.h>

namespace sf {

/// One tensor dim of a layout call: "None", one axis name, or several ({"sp", "dp"}).
class DimAxes {
 public:
  ///@{
  /// One axis name, or "None".
  DimAxes(const char* name) : names_{name} {}  // NOLINT: implicit, as in layout("mp", "None")
  DimAxes(std::string name) : names_{std::move(name)} {}  // NOLINT
  ///@}
  /// Several axis names, the first major: {"sp", "dp"}.
  DimAxes(std::initializer_list<std::string> names) : names_(names) {}
  /// Names known only at run time (a strategy file's list); first major, as the braced list.
  explicit DimAxes(std::vector<std::string> names) : names_(std::move(names)) {}
  /// The axis names, first major; {"None"} for a dim that is not split.
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

/// MindSpore's Layout: a device matrix with named axes, called per tensor to map its dims.
class Layout {
 public:
  /// Throws InvalidArgument if the counts differ, a dim is below 1, a name repeats, is empty or
  /// is "None".
  Layout(std::vector<int64_t> device_matrix, std::vector<std::string> alias_name);

  /// The device matrix, one size per axis.
  const DeviceMatrix& device_matrix() const { return mesh_; }
  /// The axes' names, in the device matrix's order.
  const std::vector<std::string>& alias_name() const { return names_; }
  /// Index of axis `name`; throws InvalidArgument naming the layout if there is none.
  int axis(const std::string& name) const;

  /// The tensor layout with one entry per dim (1 to 8 dims). The call operators are this for
  /// 1 to 4 dims (named apply, not operator(), so that layout({"sp", "dp"}) is not ambiguous).
  TensorLayout apply(const std::vector<DimAxes>& dims) const;
  ///@{
  /// apply() for a tensor of 1 to 4 dims: layout("mp", {"sp", "dp"}).
  TensorLayout operator()(DimAxes d0) const { return apply({std::move(d0)}); }
  TensorLayout operator()(DimAxes d0, DimAxes d1) const { return apply({std::move(d0), std::move(d1)}); }
  TensorLayout operator()(DimAxes d0, DimAxes d1, DimAxes d2) const {
    return apply({std::move(d0), std::move(d1), std::move(d2)});
  }
  TensorLayout operator()(DimAxes d0, DimAxes d1, DimAxes d2, DimAxes d3) const {
    return apply({std::move(d0), std::move(d1), std::move(d2), std::move(d3)});
  }
  ///@}

  /// "Layout((2,2,2), ('dp', 'sp', 'mp'))".
  std::string str() const;

 private:
  DeviceMatrix mesh_;
  std::vector<std::string> names_;
};

}  // namespace sf
