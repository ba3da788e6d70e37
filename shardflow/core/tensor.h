// Tensor: a dense, row-major block of f32 or i32 elements with a shape.
//
// Storage is shared: copying a Tensor copies a reference, never the elements, so tensors
// move between actors of one process by reference. view() and rows() return tensors that
// share the storage (cheap slices along dim 0 and reshapes); clone() makes a deep copy.
// A Tensor is not synchronised: the runtime guarantees one writer or many readers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/core/dtype.h>
#include <shardflow/core/error.h>
#include <shardflow/core/shape.h>
#include <shardflow/core/storage_cache.h>

namespace sf {

class Tensor {
 public:
  // An undefined tensor (no storage); defined() is false.
  Tensor() = default;
  // A zero-filled tensor of the given shape.
  explicit Tensor(Shape shape, DType dtype = DType::kF32);

  static Tensor zeros(Shape shape, DType dtype = DType::kF32) { return Tensor(std::move(shape), dtype); }
  // A tensor whose elements are undefined, for outputs that are written in full before they
  // are read: it skips zeroing memory that the storage cache hands back warm.
  static Tensor empty(Shape shape, DType dtype = DType::kF32);
  static Tensor full(Shape shape, float value);
  static Tensor from_vector(Shape shape, const std::vector<float>& values);
  static Tensor from_vector(Shape shape, const std::vector<int32_t>& values);
  static Tensor scalar(float v) { return full({}, v); }

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  // Size of dim i; negative i counts from the end.
  int64_t dim(int i) const;
  int64_t numel() const { return numel_; }
  DType dtype() const { return dtype_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  // Typed element access; throws ShapeError if T does not match dtype().
  template <class T>
  T* data() {
    check_dtype(dtype_of<T>());
    return reinterpret_cast<T*>(raw()) ;
  }
  template <class T>
  const T* data() const {
    check_dtype(dtype_of<T>());
    return reinterpret_cast<const T*>(raw());
  }
  float* f32() { return data<float>(); }
  const float* f32() const { return data<float>(); }
  int32_t* i32() { return data<int32_t>(); }
  const int32_t* i32() const { return data<int32_t>(); }
  void* raw() { return storage_ ? storage_->block.bytes + offset_ * dtype_size(dtype_) : nullptr; }
  const void* raw() const { return storage_ ? storage_->block.bytes + offset_ * dtype_size(dtype_) : nullptr; }

  // Same elements, new shape with the same number of elements (one dim may be -1).
  Tensor view(Shape shape) const;
  // Rows [begin, end) of dim 0, sharing storage.
  Tensor rows(int64_t begin, int64_t end) const;
  // Deep copy into fresh storage.
  Tensor clone() const;
  // Copies the elements of src (same numel and dtype) into this tensor's storage.
  void copy_from(const Tensor& src);
  void fill(float v);
  void zero();
  // The element as float (either dtype), for tests and printing.
  float item() const;
  std::vector<float> to_vector() const;

  // True if both tensors are views on the same storage.
  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }
  // "f32(32, 784)".
  std::string describe() const;

 private:
  // Memory from the storage cache (core/storage_cache.h), returned to it when the last
  // tensor sharing it goes.
  struct Storage {
    Storage(size_t n, bool zeroed);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    detail::Block block;  // block.bytes is where the elements start
    size_t size;
  };
  Tensor(Shape shape, DType dtype, bool zeroed);
  void check_dtype(DType want) const;

  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;  // in elements
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::kF32;
};

// Bitwise equality of shape, dtype and elements.
bool bitwise_equal(const Tensor& a, const Tensor& b);

}  // namespace sf
