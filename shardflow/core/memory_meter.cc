// MemoryMeter's counters and the thread's current meter (core/memory_meter.h).
#include <shardflow/core/memory_meter.h>

namespace sf {

namespace {

// A pointer to the current scope's meter, not a shared_ptr: a trivially destructible,
// constant-initialised thread-local costs one load to check, with no guard or TLS wrapper.
thread_local const std::shared_ptr<MemoryMeter>* t_current = nullptr;
// What current_memory_meter() refers to on a thread with none (constant-initialised: no guard).
const std::shared_ptr<MemoryMeter> kNone;

}  // namespace

void MemoryMeter::charge(size_t bytes) {
  for (MemoryMeter* m = this; m != nullptr; m = m->parent_.get()) m->add(bytes);
}

void MemoryMeter::release(size_t bytes) {
  for (MemoryMeter* m = this; m != nullptr; m = m->parent_.get()) m->remove(bytes);
}

void MemoryMeter::add(size_t bytes) {
  allocations_.fetch_add(1, std::memory_order_relaxed);
  const size_t live = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  // Each charge sees the live total its own addition made, so the largest of them is the peak
  // even when threads charge and release at once.
  size_t peak = peak_.load(std::memory_order_relaxed);
  while (live > peak && !peak_.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void MemoryMeter::remove(size_t bytes) {
  frees_.fetch_add(1, std::memory_order_relaxed);
  live_.fetch_sub(bytes, std::memory_order_relaxed);
}

void MemoryMeter::reset_peak() { peak_.store(live_.load(std::memory_order_relaxed), std::memory_order_relaxed); }

MemoryMeterScope::MemoryMeterScope(std::shared_ptr<MemoryMeter> meter)
    : meter_(std::move(meter)), previous_(t_current) {
  t_current = meter_ ? &meter_ : nullptr;
}

MemoryMeterScope::~MemoryMeterScope() { t_current = previous_; }

const std::shared_ptr<MemoryMeter>& current_memory_meter() { return t_current ? *t_current : kNone; }

}  // namespace sf
