/// @file
/// Column transforms for Dataset::map, named as in MindSpore's dataset.vision/.transforms.
///
/// A transform is a small value (a variant of parameter structs), so a pipeline can be built,
/// copied and printed without closures. apply_transform runs one transform on a whole column
/// at once: the column is a tensor of shape (rows, per-row shape...), and per-row shapes
/// follow MindSpore's image convention, HWC, until HWC2CHW turns them into CHW.
/// Transforms never modify their input column; each returns a new tensor.
/// Stateless and thread-safe.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::dataset {

/// x * scale + shift, elementwise; the result is f32 (as MindSpore's vision.Rescale).
struct Rescale {
  /// x * scale + shift.
  Rescale(float scale, float shift) : scale(scale), shift(shift) {}
  float scale;  ///< the factor
  float shift;  ///< the offset added after scaling
};

/// (x - mean[c]) / stddev[c] per channel c, f32. The channel is the LAST dim of an HWC row
/// (MindSpore applies Normalize before HWC2CHW); a row of rank 2 (H, W) is one channel.
/// mean and stddev hold one value per channel.
struct Normalize {
  /// (x - mean[c]) / stddev[c].
  Normalize(std::vector<float> mean, std::vector<float> stddev) : mean(std::move(mean)), stddev(std::move(stddev)) {}
  std::vector<float> mean;    ///< one per channel
  std::vector<float> stddev;  ///< one per channel
};

/// Transposes each row from (H, W, C) to (C, H, W).
struct HWC2CHW {};

/// Converts the column to `dtype`; f32 -> i32 truncates toward zero.
struct TypeCast {
  /// Converts to `dtype`.
  explicit TypeCast(DType dtype) : dtype(dtype) {}
  DType dtype;  ///< the target dtype
};

/// One column transform, for Dataset::map.
using Transform = std::variant<Rescale, Normalize, HWC2CHW, TypeCast>;

/// "Rescale(0.00392157, 0)", "Normalize(mean=[0.1307], std=[0.3081])", ... for messages.
std::string describe(const Transform& t);

/// Applies t to `column` (shape (rows, ...)); `name` is the column's name for error messages.
/// Throws ShapeError naming the column and transform when the row shape does not fit.
/// overwrite: the caller holds the only reference to `column`'s storage, so an elementwise
/// f32 -> f32 transform may write its result there instead of allocating a new column (a
/// whole-column allocation is the dominant cost of map: first-touch page faults).
Tensor apply_transform(const Transform& t, const Tensor& column, const std::string& name, bool overwrite = false);

}  // namespace sf::dataset
