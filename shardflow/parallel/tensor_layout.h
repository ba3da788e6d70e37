/// @file
/// TensorLayout: how one tensor is spread over a device matrix — for each tensor dim the
/// device-matrix axes it is split over (first axis major), and the axes along which it is
/// *partial* (every rank holds a share, the value is their sum: a MatMul split on its reduce
/// dim). Along every other axis the tensor is replicated.
///
/// Example, seed 001: device matrix (2,2,2) named ("dp","sp","mp"), `a` of shape 2x4 with
/// layout("mp", ("sp","dp")): tensor map {{2}, {1, 0}}. Dim 0 is split 2 ways by mp; dim 1 4
/// ways, block index sp*2 + dp. Rank dp*4 + sp*2 + mp holds row block mp and column block
/// sp*2 + dp, so a0..a3 (row 0) sit on ranks 0, 4, 2, 6 and a4..a7 on 1, 5, 3, 7.
///
/// A layout knows how the user spelled it (spec(): "strategy (4,1)" or "layout('mp',
/// ('sp', 'dp'))"), so errors can quote it; equality ignores the spelling and the axis names.
/// Threading: a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <shardflow/core/shape.h>
#include <shardflow/parallel/device_matrix.h>

namespace sf {

/// The part of one tensor dim a rank holds: elements [offset, offset + extent).
struct DimSlice {
  int64_t offset = 0;  ///< the first element
  int64_t extent = 0;  ///< the number of elements
  /// Same offset and extent.
  bool operator==(const DimSlice& o) const { return offset == o.offset && extent == o.extent; }
};

/// How one tensor is spread over a device matrix (see the file comment).
class TensorLayout {
 public:
  /// For each tensor dim, the device-matrix axes it is split over, first axis major.
  using TensorMap = std::vector<std::vector<int>>;

  TensorLayout() = default;  ///< a layout of no dims on no devices
  /// Throws InvalidArgument for an axis out of range or used twice (in the map or partial).
  /// `axis_names` (one per axis, or none) and `spec` only serve printing and errors.
  TensorLayout(DeviceMatrix mesh, TensorMap tensor_map, std::vector<int> partial = {},
               std::vector<std::string> axis_names = {}, std::string spec = {});
  /// Every dim whole on every rank of `mesh`.
  static TensorLayout replicated(const DeviceMatrix& mesh, int dims);

  /// The device matrix.
  const DeviceMatrix& mesh() const { return mesh_; }
  /// The axes each dim is split over.
  const TensorMap& tensor_map() const { return map_; }
  /// Partial axes, ascending.
  const std::vector<int>& partial() const { return partial_; }
  /// The axes' names, one per axis, or none.
  const std::vector<std::string>& axis_names() const { return names_; }
  /// The number of tensor dims.
  int dims() const { return static_cast<int>(map_.size()); }
  /// Number of blocks dim `dim` is cut into.
  int64_t splits(int dim) const { return mesh_.size_of(map_.at(dim)); }
  /// Axes neither in the map nor partial, ascending: the tensor is replicated along them.
  std::vector<int> replicated_axes() const;
  /// Whether any axis is partial.
  bool is_partial() const { return !partial_.empty(); }

  /// Which block of dim `dim` rank `rank` holds.
  int64_t block(int64_t rank, int dim) const { return mesh_.index_on(rank, map_.at(dim)); }
  /// The part of a tensor of shape `global` that `rank` holds, one slice per dim.
  std::vector<DimSlice> slice(const Shape& global, int64_t rank) const;
  /// The shape of the block each rank holds of a tensor of shape `global`.
  Shape local_shape(const Shape& global) const;
  /// The ranks holding the same slice with the same value as `rank` (they differ only on the
  /// replicated axes), ascending. Ranks on a partial axis hold the same slice but other shares.
  std::vector<int> replica_group(int64_t rank) const { return mesh_.group(rank, replicated_axes()); }
  /// The ranks along `axes` through `rank`, ascending (the group of a collective on them).
  std::vector<int> group(int64_t rank, const std::vector<int>& axes) const { return mesh_.group(rank, axes); }

  /// Refuses a tensor this layout cannot hold, naming `what` (op and tensor) and the rule:
  /// another number of dims, or a dim the split does not divide ("MatMul 'fc1': strategy
  /// (3,1) does not divide dim 0 of size 32").
  void check(const Shape& global, std::string_view what) const;
  /// This layout on a job of `device_count` devices: the same if the mesh has that many; with a
  /// repeat axis appended to the mesh (replicated) if its product divides it; else throws
  /// InvalidArgument naming `what` and the spec.
  TensorLayout fit_to(int64_t device_count, std::string_view what) const;

  /// How the user wrote it ("strategy (4,1)"), else str().
  std::string spec() const { return spec_.empty() ? str() : spec_; }
  /// Per dim its axes (by name where named, else by index; "None" for none), then the mesh and
  /// any partial axes: "('mp', ('sp', 'dp')) on (2,2,2)", "(0, None) on (4,1,2) partial (2)".
  std::string str() const;
  /// Same mesh, map and partial axes (the spelling and axis names are ignored).
  bool operator==(const TensorLayout& o) const {
    return mesh_ == o.mesh_ && map_ == o.map_ && partial_ == o.partial_;
  }

 private:
  std::string axis_str(int axis) const;

  DeviceMatrix mesh_;
  TensorMap map_;
  std::vector<int> partial_;
  std::vector<std::string> names_;
  std::string spec_;
};

}  // namespace sf
