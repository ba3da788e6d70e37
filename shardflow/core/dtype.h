// Element types a Tensor can hold, and their sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sf {

enum class DType : uint8_t { kF32 = 0, kI32 = 1 };

constexpr size_t dtype_size(DType) { return 4; }  // both types are 4 bytes wide

constexpr std::string_view dtype_name(DType t) { return t == DType::kF32 ? "f32" : "i32"; }

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::kF32; }
template <>
constexpr DType dtype_of<int32_t>() { return DType::kI32; }

}  // namespace sf
