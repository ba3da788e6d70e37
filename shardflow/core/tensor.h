/// @file
/// Tensor: a dense, row-major block of f32 or i32 elements with a shape.
///
/// Storage is shared: copying a Tensor copies a reference, never the elements, so tensors
/// move between actors of one process by reference. view() and rows() return tensors that
/// share the storage (cheap slices along dim 0 and reshapes); clone() makes a deep copy.
/// A Tensor is not synchronised: the runtime guarantees one writer or many readers.
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

/// A dense, row-major block of f32 or i32 elements with a shape, sharing its storage on copy.
class Tensor {
 public:
  /// An undefined tensor (no storage); defined() is false.
  Tensor() = default;
  /// A zero-filled tensor of the given shape.
  explicit Tensor(Shape shape, DType dtype = DType::kF32);

  /// A zero-filled tensor of the given shape.
  static Tensor zeros(Shape shape, DType dtype = DType::kF32) { return Tensor(std::move(shape), dtype); }
  /// A tensor whose elements are undefined, for outputs that are written in full before they
  /// are read: it skips zeroing memory that the storage cache hands back warm.
  static Tensor empty(Shape shape, DType dtype = DType::kF32);
  /// An f32 tensor with every element `value`.
  static Tensor full(Shape shape, float value);
  ///@{
  /// A tensor of the given shape holding `values` (as many as the shape has elements).
  static Tensor from_vector(Shape shape, const std::vector<float>& values);
  static Tensor from_vector(Shape shape, const std::vector<int32_t>& values);
  ///@}
  /// A rank-0 f32 tensor holding `v`.
  static Tensor scalar(float v) { return full({}, v); }
  /// A tensor over memory someone else owns (a numpy array, for the Python binding): no copy;
  /// `owner` is kept alive while any tensor shares the memory and released after the last one.
  /// `data` must hold numel(shape) elements of `dtype`, contiguous in row-major order.
  static Tensor borrow(Shape shape, DType dtype, void* data, std::shared_ptr<void> owner);

  /// False for a default-constructed tensor, which has no storage.
  bool defined() const { return storage_ != nullptr; }
  /// The size of each dim.
  const Shape& shape() const { return shape_; }
  /// The number of dims.
  int rank() const { return static_cast<int>(shape_.size()); }
  /// Size of dim i; negative i counts from the end.
  int64_t dim(int i) const;
  /// The number of elements.
  int64_t numel() const { return numel_; }
  /// The element type.
  DType dtype() const { return dtype_; }
  /// The size of the elements in bytes.
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }

  ///@{
  /// Typed element access; throws ShapeError if T does not match dtype().
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
  ///@}
  ///@{
  /// The f32 elements; throws ShapeError for an i32 tensor.
  float* f32() { return data<float>(); }
  const float* f32() const { return data<float>(); }
  ///@}
  ///@{
  /// The i32 elements; throws ShapeError for an f32 tensor.
  int32_t* i32() { return data<int32_t>(); }
  const int32_t* i32() const { return data<int32_t>(); }
  ///@}
  ///@{
  /// The first element's bytes, whatever the dtype; null for an undefined tensor.
  void* raw() { return storage_ ? storage_->block.bytes + offset_ * dtype_size(dtype_) : nullptr; }
  const void* raw() const { return storage_ ? storage_->block.bytes + offset_ * dtype_size(dtype_) : nullptr; }
  ///@}

  /// Same elements, new shape with the same number of elements (one dim may be -1).
  Tensor view(Shape shape) const;
  /// Rows [begin, end) of dim 0, sharing storage.
  Tensor rows(int64_t begin, int64_t end) const;
  /// Deep copy into fresh storage.
  Tensor clone() const;
  /// Copies the elements of src (same numel and dtype) into this tensor's storage.
  void copy_from(const Tensor& src);
  /// Sets every element to `v`.
  void fill(float v);
  /// Sets every element to 0.
  void zero();
  /// The element as float (either dtype), for tests and printing.
  float item() const;
  /// The elements as floats (either dtype), in row-major order.
  std::vector<float> to_vector() const;

  /// True if both tensors are views on the same storage.
  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }
  /// "f32(32, 784)".
  std::string describe() const;

 private:
  /// Memory from the storage cache (core/storage_cache.h), returned to it when the last
  /// tensor sharing it goes.
  struct Storage {
    Storage(size_t n, bool zeroed);
    Storage(void* data, size_t n, std::shared_ptr<void> owner);  ///< borrowed memory (borrow())
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
    detail::Block block;  ///< block.bytes is where the elements start
    size_t size;
    std::shared_ptr<void> owner;  ///< set for borrowed memory, which never goes to the cache
  };
  Tensor(Shape shape, DType dtype, bool zeroed);
  void check_dtype(DType want) const;

  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;  ///< in elements
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::kF32;
};

/// Bitwise equality of shape, dtype and elements.
bool bitwise_equal(const Tensor& a, const Tensor& b);

}  // namespace sf
