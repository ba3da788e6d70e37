/// @file
/// Element types a Tensor can hold, and their sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sf {

/// The element type of a Tensor.
enum class DType : uint8_t {
  kF32 = 0,  ///< 32-bit float
  kI32 = 1,  ///< 32-bit signed integer
};

/// The size of one element in bytes: both types are 4 bytes wide.
constexpr size_t dtype_size(DType) { return 4; }

/// "f32" or "i32".
constexpr std::string_view dtype_name(DType t) { return t == DType::kF32 ? "f32" : "i32"; }

///@{
/// The DType of the C++ element type T (float or int32_t).
template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::kF32; }
template <>
constexpr DType dtype_of<int32_t>() { return DType::kI32; }
///@}

}  // namespace sf
