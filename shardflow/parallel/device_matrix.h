/// @file
/// DeviceMatrix: the devices of a job arranged as an n-d grid (MindSpore's device matrix), and
/// the rank arithmetic every layout, strategy and communication group shares.
///
/// Ranks are numbered row-major, the last axis varying fastest (MindSpore's order): for
/// (2, 2, 2), rank = c0*4 + c1*2 + c2. A group "along" some axes is the set of ranks whose
/// coordinates differ only on those axes; its ranks are listed in ascending order, which is
/// also the row-major order of their coordinates on those axes (a collective's group-local
/// rank is then that mixed-radix index).
///
/// Threading: a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sf {

/// The most devices a device matrix (or a tuple strategy's product) may span: far beyond any
/// job, and small enough that products of dims, and of a dim with a repeat count, never
/// overflow int64.
inline constexpr int64_t kMaxDevices = int64_t{1} << 24;
/// The most axes a device matrix (or entries a tuple strategy) may have.
inline constexpr size_t kMaxDeviceAxes = 32;

/// The product of `dims`; throws InvalidArgument "<what> (...): every dim must be at least 1",
/// "... spans more than kMaxDevices devices" (before anything overflows) or "... has more than
/// kMaxDeviceAxes dims".
int64_t device_product(const std::vector<int64_t>& dims, std::string_view what);

/// The devices of a job as an n-d grid, with the rank arithmetic on it (row-major ranks).
class DeviceMatrix {
 public:
  DeviceMatrix() = default;  ///< no axes
  /// Throws InvalidArgument if a dim is below 1 or the dims span more than kMaxDevices.
  explicit DeviceMatrix(std::vector<int64_t> dims);

  /// The size of each axis.
  const std::vector<int64_t>& dims() const { return dims_; }
  /// The number of axes.
  int axes() const { return static_cast<int>(dims_.size()); }
  /// The size of axis `axis`.
  int64_t dim(int axis) const { return dims_.at(axis); }
  /// Product of the dims: the number of devices.
  int64_t device_count() const;
  /// Product of the dims of `axes` (1 for none).
  int64_t size_of(const std::vector<int>& axes) const;

  /// Coordinates of `rank`, one per axis; throws InvalidArgument for a rank out of range.
  std::vector<int64_t> coords(int64_t rank) const;
  /// The rank at `coords` (the inverse of coords()).
  int64_t rank_of(const std::vector<int64_t>& coords) const;
  /// Mixed-radix index of `rank`'s coordinates on `axes`, the first axis most significant.
  int64_t index_on(int64_t rank, const std::vector<int>& axes) const;

  /// The ranks that differ from `rank` only on `axes`, ascending.
  std::vector<int> group(int64_t rank, const std::vector<int>& axes) const;
  /// Every such group: a partition of all ranks, ordered by first rank.
  std::vector<std::vector<int>> groups(const std::vector<int>& axes) const;

  /// This matrix if it has `device_count` devices; with a new last axis of the repeat count if
  /// its product divides `device_count` (MindSpore's repeated calculation). Otherwise throws
  /// InvalidArgument: "<what>: device matrix (2,3) has 6 devices, which neither equals nor
  /// divides the 8 devices of the job".
  DeviceMatrix fit_to(int64_t device_count, std::string_view what) const;

  /// "(2,2,2)".
  std::string str() const;
  /// Same dims.
  bool operator==(const DeviceMatrix& o) const { return dims_ == o.dims_; }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace sf
