#include <shardflow/data/transforms.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include <shardflow/core/error.h>

namespace sf::dataset {

namespace {

// Calls f(const T* in) with the column's elements typed as they are stored.
template <class F>
auto with_elements(const Tensor& column, F&& f) {
  return column.dtype() == DType::kF32 ? f(column.f32()) : f(column.i32());
}

// A destination for an elementwise f32 result: `column` itself when the caller allows it.
Tensor f32_output(const Tensor& column, bool overwrite) {
  return overwrite && column.dtype() == DType::kF32 ? column : Tensor(column.shape(), DType::kF32);
}

Tensor rescale(const Rescale& r, const Tensor& column, bool overwrite) {
  Tensor out = f32_output(column, overwrite);
  float* y = out.f32();
  const int64_t n = column.numel();
  with_elements(column, [&](const auto* x) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]) * r.scale + r.shift;
  });
  return out;
}

Tensor normalize(const Normalize& t, const Tensor& column, const std::string& name, bool overwrite) {
  const int row_rank = column.rank() - 1;
  SF_ENFORCE(row_rank == 2 || row_rank == 3, ShapeError,
             "map {} on column '{}': rows must be (H, W) or (H, W, C), got column {}", describe(Transform(t)), name,
             column.describe());
  const int64_t channels = row_rank == 3 ? column.dim(-1) : 1;
  SF_ENFORCE(static_cast<int64_t>(t.mean.size()) == channels && static_cast<int64_t>(t.stddev.size()) == channels,
             ShapeError, "map {} on column '{}': {} channels (last dim of {}) need {} mean and std values",
             describe(Transform(t)), name, channels, column.describe(), channels);
  for (float s : t.stddev)
    SF_ENFORCE(s != 0.0f, InvalidArgument, "map {} on column '{}': std must not be 0", describe(Transform(t)), name);

  Tensor out = f32_output(column, overwrite);
  float* y = out.f32();
  const int64_t pixels = column.numel() / channels;
  with_elements(column, [&](const auto* x) {
    if (channels == 1) {  // the common grey-scale case: one flat, vectorisable loop
      const float m = t.mean[0], s = t.stddev[0];
      for (int64_t i = 0; i < pixels; ++i) y[i] = (static_cast<float>(x[i]) - m) / s;
      return;
    }
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t i = p * channels + c;
        y[i] = (static_cast<float>(x[i]) - t.mean[c]) / t.stddev[c];
      }
  });
  return out;
}

Tensor hwc_to_chw(const Tensor& column, const std::string& name) {
  SF_ENFORCE(column.rank() == 4, ShapeError, "map HWC2CHW on column '{}': rows must be (H, W, C), got column {}", name,
             column.describe());
  const int64_t n = column.dim(0), h = column.dim(1), w = column.dim(2), c = column.dim(3);
  // With one channel the element order of HWC and CHW is the same: a reshape suffices.
  if (c == 1) return column.view({n, c, h, w});
  Tensor out({n, c, h, w}, column.dtype());
  // Both dtypes are 4 bytes wide, so move elements as raw 32-bit words.
  const auto* x = static_cast<const uint32_t*>(column.raw());
  auto* y = static_cast<uint32_t*>(out.raw());
  const int64_t hw = h * w;
  for (int64_t r = 0; r < n; ++r) {
    const uint32_t* xr = x + r * hw * c;
    uint32_t* yr = y + r * hw * c;
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t k = 0; k < c; ++k) yr[k * hw + p] = xr[p * c + k];
  }
  return out;
}

Tensor type_cast(const TypeCast& t, const Tensor& column) {
  if (column.dtype() == t.dtype) return column;  // columns are immutable: sharing is safe
  Tensor out(column.shape(), t.dtype);
  const int64_t n = column.numel();
  if (t.dtype == DType::kI32) {
    const float* x = column.f32();
    int32_t* y = out.i32();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int32_t>(x[i]);
  } else {
    const int32_t* x = column.i32();
    float* y = out.f32();
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
  }
  return out;
}

}  // namespace

std::string describe(const Transform& t) {
  struct Printer {
    std::string operator()(const Rescale& r) const { return fmt::format("Rescale({}, {})", r.scale, r.shift); }
    std::string operator()(const Normalize& n) const {
      return fmt::format("Normalize(mean=[{}], std=[{}])", fmt::join(n.mean, ", "), fmt::join(n.stddev, ", "));
    }
    std::string operator()(const HWC2CHW&) const { return "HWC2CHW()"; }
    std::string operator()(const TypeCast& c) const { return fmt::format("TypeCast({})", dtype_name(c.dtype)); }
  };
  return std::visit(Printer{}, t);
}

Tensor apply_transform(const Transform& t, const Tensor& column, const std::string& name, bool overwrite) {
  SF_ENFORCE(column.defined() && column.rank() >= 1, ShapeError, "map {}: column '{}' has no row dim", describe(t),
             name);
  if (const auto* r = std::get_if<Rescale>(&t)) return rescale(*r, column, overwrite);
  if (const auto* n = std::get_if<Normalize>(&t)) return normalize(*n, column, name, overwrite);
  if (std::holds_alternative<HWC2CHW>(t)) return hwc_to_chw(column, name);
  return type_cast(std::get<TypeCast>(t), column);
}

}  // namespace sf::dataset
