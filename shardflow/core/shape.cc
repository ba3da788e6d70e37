#include <shardflow/core/shape.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <shardflow/core/error.h>

namespace sf {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    SF_ENFORCE(!__builtin_mul_overflow(n, d, &n), ShapeError, "shape {} has more than 2^63 elements", shape_str(s));
  return n;
}

std::string shape_str(const Shape& s) {
  if (s.size() == 1) return fmt::format("({},)", s[0]);
  return fmt::format("({})", fmt::join(s, ", "));
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

}  // namespace sf
