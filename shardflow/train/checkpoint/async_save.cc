// The asynchronous save: save.cc's three steps with the write on a thread (async_save.h).
#include <shardflow/train/checkpoint/async_save.h>

#include <cstring>
#include <utility>

namespace sf::ckpt {

AsyncCheckpointWriter::~AsyncCheckpointWriter() {
  try {
    wait();
  } catch (...) {
    // A destructor must not throw; wait() already ended the save on every rank alike.
  }
}

void AsyncCheckpointWriter::save(const std::string& dir, const std::vector<ShardedTensor>& tensors,
                                 const SaveOptions& options) {
  start(dir, tensors, options, /*copy=*/true);
}

void AsyncCheckpointWriter::save_owned(const std::string& dir, const std::vector<ShardedTensor>& tensors,
                                       const SaveOptions& options) {
  start(dir, tensors, options, /*copy=*/false);
}

void AsyncCheckpointWriter::start(const std::string& dir, const std::vector<ShardedTensor>& tensors,
                                  const SaveOptions& options, bool copy) {
  wait();
  detail::PendingSave save = detail::begin_save(dir, tensors, options);
  // One memcpy per block into buffers this writer owns: the caller's tensors are free again
  // when save() returns. Tensor::empty skips zeroing bytes about to be overwritten.
  if (copy && staging_.size() > save.blocks.size()) staging_.resize(save.blocks.size());
  for (size_t i = 0; copy && i < save.blocks.size(); ++i) {
    const Tensor& src = save.blocks[i].second;
    if (i == staging_.size()) staging_.push_back(Tensor());
    Tensor& dst = staging_[i];
    if (!dst.defined() || dst.shape() != src.shape() || dst.dtype() != src.dtype())
      dst = Tensor::empty(src.shape(), src.dtype());
    if (src.nbytes() > 0) std::memcpy(dst.raw(), src.raw(), src.nbytes());
    save.blocks[i].second = dst;
  }
  pending_ = std::move(save);
  written_.store(false, std::memory_order_release);
  writer_ = std::thread([this] {
    detail::write_pending(*pending_);
    written_.store(true, std::memory_order_release);
  });
}

std::optional<SaveReport> AsyncCheckpointWriter::wait() {
  if (!pending_) return std::nullopt;
  if (writer_.joinable()) writer_.join();
  detail::PendingSave save = std::move(*pending_);
  pending_.reset();
  // The staging buffers stay with staging_; drop the save's references to them.
  save.blocks.clear();
  return detail::finish_save(save);
}

}  // namespace sf::ckpt
