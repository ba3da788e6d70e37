/// @file
/// MemoryMeter: a tracking allocator's ledger, to measure (not estimate) the tensor memory a
/// piece of work holds. While a meter is current on a thread (MemoryMeterScope), every Tensor
/// storage allocated on that thread is charged to it: its live bytes grow by the storage's
/// size, and its peak keeps the most they ever were. The storage keeps a shared reference to
/// the meter and releases its bytes from it when the last tensor sharing it goes, on whatever
/// thread that happens and whether or not the scope still exists, so a meter's live bytes are
/// the bytes of its storages still alive.
///
/// What is charged: the bytes the tensor asked for (Tensor::nbytes()), not the storage cache's
/// size class (core/storage_cache.h), so that the count is the same whatever the cache does.
/// Views and copies of a Tensor share its storage and cost nothing. A meter may have a parent
/// that is charged with it, to measure parts (one op's bytes) and their whole (a region's) at once.
///
/// Why thread-scoped: the actor runtime runs an op's kernel on a worker thread it picks per
/// firing, so it makes the op's meter current around the kernel (actors/node_meters.h); a
/// thread-local is the only place an allocation deep inside a kernel can find it. Without a
/// meter an allocation costs one thread-local pointer check more.
///
/// Threading: a MemoryMeter is thread-safe (atomics); a scope belongs to the thread that made
/// it. Ownership: meters are shared (std::shared_ptr) between their creator, the scopes that make
/// them current and the storages charged to them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace sf {

/// Live bytes, peak bytes and counts of the tensor storages charged to it (see the file comment).
class MemoryMeter {
 public:
  /// A meter with nothing charged.
  MemoryMeter() = default;
  /// A meter with nothing charged whose charges and releases also go to `parent` (and its
  /// parents): a parent's peak is the peak of its children's sum, which the children's own peaks
  /// cannot give when they peak at different times.
  explicit MemoryMeter(std::shared_ptr<MemoryMeter> parent) : parent_(std::move(parent)) {}
  MemoryMeter(const MemoryMeter&) = delete;
  MemoryMeter& operator=(const MemoryMeter&) = delete;

  /// Bytes charged and not yet released.
  size_t live_bytes() const { return live_.load(std::memory_order_relaxed); }
  /// The most live_bytes() has been since construction or the last reset_peak().
  size_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  /// Storages charged so far.
  int64_t allocations() const { return allocations_.load(std::memory_order_relaxed); }
  /// Storages released so far.
  int64_t frees() const { return frees_.load(std::memory_order_relaxed); }
  /// Sets the peak to the live bytes now, to measure the peak of a later phase on its own.
  void reset_peak();

  /// Records an allocation of `bytes` here and in every parent (Tensor's storage calls it; any
  /// other allocator may too).
  void charge(size_t bytes);
  /// Records that `bytes` charged earlier were freed, here and in every parent.
  void release(size_t bytes);
  /// The meter this one passes its charges on to, or null.
  const std::shared_ptr<MemoryMeter>& parent() const { return parent_; }

 private:
  void add(size_t bytes);
  void remove(size_t bytes);

  const std::shared_ptr<MemoryMeter> parent_;
  std::atomic<size_t> live_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<int64_t> allocations_{0};
  std::atomic<int64_t> frees_{0};
};

/// Makes a meter current on the calling thread for the scope's lifetime and restores the
/// previous one (or none) after; scopes nest. A null meter makes no meter current, so that the
/// allocations inside are charged to nothing.
class MemoryMeterScope {
 public:
  /// Makes `meter` (may be null) the calling thread's current meter.
  explicit MemoryMeterScope(std::shared_ptr<MemoryMeter> meter);
  /// Restores the meter that was current before.
  ~MemoryMeterScope();
  MemoryMeterScope(const MemoryMeterScope&) = delete;
  MemoryMeterScope& operator=(const MemoryMeterScope&) = delete;

 private:
  std::shared_ptr<MemoryMeter> meter_;
  const std::shared_ptr<MemoryMeter>* previous_;
};

/// The calling thread's current meter, or null; the reference is valid while the scope that
/// made it current lives.
const std::shared_ptr<MemoryMeter>& current_memory_meter();

}  // namespace sf
