#include <shardflow/core/tensor.h>

#include <cstdlib>
#include <cstring>

#include <shardflow/core/brief.h>
#include <shardflow/core/memory_meter.h>

namespace sf {

Tensor::Storage::Storage(size_t n, bool zeroed) : block(detail::StorageCache::global().acquire(n)), size(n) {
  // A fresh mapping is already zero; everything else may hold old bytes.
  if (zeroed && !(block.fresh && block.mapped)) std::memset(block.bytes, 0, n);
}

Tensor::Storage::Storage(void* data, size_t n, std::shared_ptr<void> o) : size(n), owner(std::move(o)) {
  block.bytes = static_cast<std::byte*>(data);
  block.capacity = n;
}

Tensor::Storage::~Storage() {
  if (!owner) detail::StorageCache::global().release(block);
}

Tensor::Tensor(Shape shape, DType dtype) : Tensor(std::move(shape), dtype, true) {}

Tensor::Tensor(Shape shape, DType dtype, bool zeroed) : shape_(std::move(shape)), dtype_(dtype) {
  for (int64_t d : shape_) SF_ENFORCE(d >= 0, ShapeError, "tensor shape {} has a negative dim", brief_shape(shape_));
  numel_ = sf::numel(shape_);
  const std::shared_ptr<MemoryMeter>& meter = current_memory_meter();
  if (!meter) {
    storage_ = std::make_shared<Storage>(nbytes(), zeroed);
    return;
  }
  // Charged to the thread's meter (core/memory_meter.h); the deleter holds the meter, so the
  // bytes are released from it whenever and wherever the last tensor sharing them goes.
  const size_t n = nbytes();
  auto owned = std::make_unique<Storage>(n, zeroed);
  meter->charge(n);
  storage_ = std::shared_ptr<Storage>(owned.release(), [meter = meter, n](Storage* s) {
    delete s;
    meter->release(n);
  });
}

Tensor Tensor::empty(Shape shape, DType dtype) { return Tensor(std::move(shape), dtype, false); }

Tensor Tensor::borrow(Shape shape, DType dtype, void* data, std::shared_ptr<void> owner) {
  for (int64_t d : shape) SF_ENFORCE(d >= 0, ShapeError, "tensor shape {} has a negative dim", brief_shape(shape));
  SF_ENFORCE(owner != nullptr, InvalidArgument, "Tensor::borrow: borrowed memory needs an owner");
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  t.numel_ = sf::numel(t.shape_);
  t.storage_ = std::make_shared<Storage>(data, t.nbytes(), std::move(owner));
  return t;
}

Tensor Tensor::full(Shape shape, float value) {
  Tensor t = empty(std::move(shape));
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(Shape shape, const std::vector<float>& values) {
  Tensor t = empty(std::move(shape), DType::kF32);
  SF_ENFORCE(static_cast<int64_t>(values.size()) == t.numel(), ShapeError,
             "from_vector: {} values do not fill shape {}", values.size(), brief_shape(t.shape()));
  std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

Tensor Tensor::from_vector(Shape shape, const std::vector<int32_t>& values) {
  Tensor t = empty(std::move(shape), DType::kI32);
  SF_ENFORCE(static_cast<int64_t>(values.size()) == t.numel(), ShapeError,
             "from_vector: {} values do not fill shape {}", values.size(), brief_shape(t.shape()));
  std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

int64_t Tensor::dim(int i) const {
  int r = rank();
  int j = i < 0 ? i + r : i;
  SF_ENFORCE(j >= 0 && j < r, ShapeError, "dim {} out of range for tensor {}", i, describe());
  return shape_[j];
}

void Tensor::check_dtype(DType want) const {
  SF_ENFORCE(dtype_ == want, ShapeError, "tensor {} accessed as {}", describe(), dtype_name(want));
}

Tensor Tensor::view(Shape shape) const {
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      SF_ENFORCE(infer < 0, ShapeError, "view {}: more than one -1", brief_shape(shape));
      infer = static_cast<int>(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    SF_ENFORCE(known > 0 && numel_ % known == 0, ShapeError, "cannot view {} as {}", describe(), brief_shape(shape));
    shape[infer] = numel_ / known;
  }
  SF_ENFORCE(sf::numel(shape) == numel_, ShapeError, "cannot view {} as {}: {} elements vs {}", describe(),
             brief_shape(shape), numel_, sf::numel(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  SF_ENFORCE(rank() >= 1, ShapeError, "rows() of scalar tensor");
  SF_ENFORCE(0 <= begin && begin <= end && end <= shape_[0], ShapeError, "rows [{}, {}) out of range for {}", begin,
             end, describe());
  Tensor t = *this;
  int64_t row = shape_[0] ? numel_ / shape_[0] : 0;
  t.offset_ = offset_ + begin * row;
  t.shape_[0] = end - begin;
  t.numel_ = (end - begin) * row;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_);
  if (numel_) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  SF_ENFORCE(src.numel() == numel_ && src.dtype() == dtype_, ShapeError, "copy_from: {} into {}", src.describe(),
             describe());
  if (numel_ && raw() != src.raw()) std::memcpy(raw(), src.raw(), nbytes());
}

void Tensor::fill(float v) {
  if (dtype_ == DType::kF32) {
    float* p = f32();
    for (int64_t i = 0; i < numel_; ++i) p[i] = v;
  } else {
    int32_t* p = i32();
    for (int64_t i = 0; i < numel_; ++i) p[i] = static_cast<int32_t>(v);
  }
}

void Tensor::zero() {
  if (numel_) std::memset(raw(), 0, nbytes());
}

float Tensor::item() const {
  SF_ENFORCE(numel_ == 1, ShapeError, "item() of tensor {} with {} elements", describe(), numel_);
  return dtype_ == DType::kF32 ? *f32() : static_cast<float>(*i32());
}

std::vector<float> Tensor::to_vector() const {
  std::vector<float> v(numel_);
  if (dtype_ == DType::kF32) {
    if (numel_) std::memcpy(v.data(), f32(), nbytes());
  } else {
    for (int64_t i = 0; i < numel_; ++i) v[i] = static_cast<float>(i32()[i]);
  }
  return v;
}

std::string Tensor::describe() const { return fmt::format("{}{}", dtype_name(dtype_), shape_str(shape_)); }

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  return a.numel() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

}  // namespace sf
