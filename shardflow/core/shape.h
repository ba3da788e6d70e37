/// @file
/// Shape of a tensor: a list of dimension sizes, outermost first (row-major).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sf {

/// The size of each dim, outermost first.
using Shape = std::vector<int64_t>;

/// Number of elements; 1 for a scalar (empty shape). Throws ShapeError on overflow.
int64_t numel(const Shape& s);

/// "(32, 784)", "()" for a scalar.
std::string shape_str(const Shape& s);

/// Row-major strides in elements.
std::vector<int64_t> strides_of(const Shape& s);

}  // namespace sf
