#include <shardflow/core/storage_cache.h>

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>

namespace sf::detail {

namespace {
constexpr size_t kAlign = 64;
constexpr size_t kSmallStep = size_t{64} << 10;
// From this size buffers are mapped 2 MiB aligned as transparent huge pages: a first touch
// costs ~0.3 us per 4 KiB with THP against ~11 us without.
constexpr size_t kHuge = size_t{2} << 20;

size_t round_up(size_t n, size_t step) { return (n + step - 1) / step * step; }

size_t class_of(size_t n) {
  if (n < StorageCache::kMinBytes) return round_up(n == 0 ? 1 : n, kAlign);
  return n < kHuge ? round_up(n, kSmallStep) : round_up(n, kHuge);
}

size_t limit_from_env() {
  const char* v = std::getenv("SF_TENSOR_CACHE_MB");
  if (!v || !*v) return size_t{1024} << 20;
  try {
    const long long mb = std::stoll(v);
    return mb <= 0 ? 0 : static_cast<size_t>(mb) << 20;
  } catch (const std::exception&) {
    return size_t{1024} << 20;
  }
}

Block allocate(size_t cls) {
  Block b{.capacity = cls, .fresh = true};
  if (cls >= kHuge) {
    b.mapped = cls + kHuge;  // room to align the start
    void* p = mmap(nullptr, b.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    b.base = static_cast<std::byte*>(p);
    b.bytes = b.base + (kHuge - reinterpret_cast<uintptr_t>(b.base) % kHuge) % kHuge;
    madvise(b.bytes, cls, MADV_HUGEPAGE);
    return b;
  }
  b.base = b.bytes = static_cast<std::byte*>(std::aligned_alloc(kAlign, cls));
  if (!b.bytes) throw std::bad_alloc();
  return b;
}
}  // namespace

StorageCache& StorageCache::global() {
  static StorageCache* cache = new StorageCache();  // never destroyed: tensors may outlive statics
  return *cache;
}

StorageCache::StorageCache() : limit_(limit_from_env()) {}

void StorageCache::free_block(const Block& b) {
  if (b.mapped)
    munmap(b.base, b.mapped);
  else
    std::free(b.base);
}

Block StorageCache::acquire(size_t bytes) {
  const size_t cls = class_of(bytes);
  if (cls >= kMinBytes && limit_ > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(cls);
    if (it != free_.end() && !it->second.empty()) {
      Block b = it->second.back();
      it->second.pop_back();
      cached_ -= cls;
      b.fresh = false;
      return b;
    }
  }
  return allocate(cls);
}

void StorageCache::release(const Block& block) {
  if (block.capacity < kMinBytes || block.capacity > limit_) return free_block(block);
  std::vector<Block> evicted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Make room from the largest classes down: they are the most likely to be stale
    // (a finished phase's activations), and the fewest blocks free the most bytes.
    for (auto it = free_.rbegin(); cached_ + block.capacity > limit_ && it != free_.rend(); ++it) {
      while (!it->second.empty() && cached_ + block.capacity > limit_) {
        evicted.push_back(it->second.back());
        it->second.pop_back();
        cached_ -= it->first;
      }
    }
    Block kept = block;
    kept.fresh = false;
    free_[block.capacity].push_back(kept);
    cached_ += block.capacity;
  }
  for (const Block& b : evicted) free_block(b);
}

size_t StorageCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

void StorageCache::clear() {
  std::map<size_t, std::vector<Block>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(free_);
    cached_ = 0;
  }
  for (auto& [cls, blocks] : all)
    for (const Block& b : blocks) free_block(b);
}

}  // namespace sf::detail
