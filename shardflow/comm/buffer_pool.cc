#include <shardflow/comm/buffer_pool.h>

#include <bit>

namespace sf::comm {

namespace {
uint64_t key_of(size_t class_bytes, DType dtype) { return (uint64_t{class_bytes} << 8) | static_cast<uint8_t>(dtype); }
}  // namespace

BufferPool& BufferPool::global() {
  static BufferPool* pool = new BufferPool();  // never destroyed: threads may release at exit
  return *pool;
}

size_t BufferPool::size_class(size_t nbytes) { return std::bit_ceil(std::max<size_t>(nbytes, 64)); }

Tensor BufferPool::fresh(size_t cls, DType dtype) {
  const int64_t elems = static_cast<int64_t>(cls / dtype_size(dtype));
  if (cls < kCarveMinBytes || cls >= kCarveBlockBytes) return Tensor::empty({elems}, dtype);
  // One block of huge pages cut into buffers of this class: the first is handed out, the rest
  // go to the free list (they share the block, which lives while any of them does).
  const Tensor block = Tensor::empty({static_cast<int64_t>(kCarveBlockBytes / dtype_size(dtype))}, dtype);
  const int64_t pieces = static_cast<int64_t>(kCarveBlockBytes / cls);
  std::lock_guard<std::mutex> lock(mu_);
  auto& list = free_[key_of(cls, dtype)];
  for (int64_t k = 1; k < pieces; ++k) list.push_back(block.rows(k * elems, (k + 1) * elems));
  free_bytes_ += static_cast<size_t>(pieces - 1) * cls;
  return block.rows(0, elems);
}

Tensor BufferPool::acquire(DType dtype, int64_t numel) {
  if (numel <= 0) return Tensor({0}, dtype);
  const size_t cls = size_class(static_cast<size_t>(numel) * dtype_size(dtype));
  const uint64_t key = key_of(cls, dtype);
  Tensor full;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(key);
    if (it != free_.end() && !it->second.empty()) {
      full = std::move(it->second.back());
      it->second.pop_back();
      free_bytes_ -= cls;
    }
  }
  if (!full.defined()) full = fresh(cls, dtype);  // outside the lock
  Tensor t = full.rows(0, numel);
  const void* ptr = full.raw();  // before the move below
  std::lock_guard<std::mutex> lock(mu_);
  out_.insert_or_assign(ptr, Outstanding{std::move(full), 1});
  return t;
}

void BufferPool::retain(const Tensor& t, int extra) {
  if (!t.defined() || t.numel() == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = out_.find(t.raw());
  if (it != out_.end()) it->second.refs += extra;
}

void BufferPool::release(const Tensor& t) {
  if (!t.defined() || t.numel() == 0) return;
  Tensor dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  auto it = out_.find(t.raw());
  if (it == out_.end() || --it->second.refs > 0) return;
  Tensor full = std::move(it->second.full);
  out_.erase(it);
  if (free_bytes_ + full.nbytes() > kMaxFreeBytes) {
    dropped = std::move(full);
    return;
  }
  free_bytes_ += full.nbytes();
  free_[key_of(full.nbytes(), full.dtype())].push_back(std::move(full));
}

Tensor BufferPool::adopt(const Tensor& t) {
  if (!t.defined() || t.numel() == 0) return t;
  Tensor forgotten;  // the pool's handle on the whole buffer, dropped outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = out_.find(t.raw());
    if (it == out_.end()) return t;
    if (it->second.refs == 1) {
      forgotten = std::move(it->second.full);
      out_.erase(it);
      return t;
    }
  }
  Tensor copy = t.clone();
  release(t);
  return copy;
}

void BufferPool::prefault(const std::vector<size_t>& message_bytes) {
  std::vector<Tensor> held;  // all held until the end: two messages of one class need two buffers
  size_t total = 0;
  for (size_t n : message_bytes) {
    if (n == 0) continue;
    const int64_t numel = static_cast<int64_t>((n + sizeof(float) - 1) / sizeof(float));
    const size_t cls = size_class(static_cast<size_t>(numel) * sizeof(float));
    if (total + cls > kMaxFreeBytes) break;
    total += cls;
    held.push_back(acquire(DType::kF32, numel));
    // One write per page maps it; the receive overwrites the bytes.
    auto* bytes = static_cast<volatile char*>(held.back().raw());
    for (size_t at = 0; at < held.back().nbytes(); at += 4096) bytes[at] = 0;
  }
  for (const Tensor& t : held) release(t);
}

size_t BufferPool::free_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_bytes_;
}

size_t BufferPool::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return out_.size();
}

}  // namespace sf::comm
