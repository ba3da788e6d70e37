#include <shardflow/data/batch_iterator.h>

#include <algorithm>

#include <shardflow/core/error.h>
#include <shardflow/data/sharding.h>

namespace sf::dataset {

BatchIterator::BatchIterator(std::vector<Tensor> columns, int64_t batch_size, bool drop_remainder,
                             std::vector<int64_t> order)
    : columns_(std::move(columns)), order_(std::move(order)) {
  SF_ENFORCE(batch_size >= 0, InvalidArgument, "BatchIterator: batch_size must be >= 0, got {}", batch_size);
  rows_ = columns_.empty() ? 0 : columns_[0].dim(0);
  SF_ENFORCE(order_.empty() || static_cast<int64_t>(order_.size()) == rows_, InvalidArgument,
             "BatchIterator: order has {} entries for {} rows", order_.size(), rows_);
  squeeze_ = batch_size == 0;
  batch_ = squeeze_ ? 1 : batch_size;
  num_batches_ = drop_remainder ? rows_ / batch_ : (rows_ + batch_ - 1) / batch_;

  out_.resize(columns_.size());
  for (const Tensor& col : columns_) row_shapes_.emplace_back(col.shape().begin() + 1, col.shape().end());
  if (order_.empty()) return;
  // Shuffled: allocate the gather buffers once; out_ aliases them (or their one-row view).
  for (size_t c = 0; c < columns_.size(); ++c) {
    Shape shape = columns_[c].shape();
    shape[0] = batch_;
    buffers_.emplace_back(shape, columns_[c].dtype());
    out_[c] = squeeze_ ? buffers_[c].view(row_shapes_[c]) : buffers_[c];
  }
}

void BatchIterator::skip(int64_t count) {
  SF_ENFORCE(count >= 0 && count <= num_batches_ - step_, InvalidArgument,
             "BatchIterator::skip: count must be in [0, {}] (the batches left of {}), got {}", num_batches_ - step_,
             num_batches_, count);
  step_ += count;  // a batch's rows depend only on its index, so nothing else moves
}

const std::vector<Tensor>* BatchIterator::next() {
  if (step_ >= num_batches_) return nullptr;
  const int64_t begin = step_ * batch_;
  const int64_t count = std::min(batch_, rows_ - begin);
  ++step_;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (order_.empty()) {
      Tensor rows = columns_[c].rows(begin, begin + count);
      out_[c] = squeeze_ ? rows.view(row_shapes_[c]) : std::move(rows);
    } else {
      gather_rows_into(columns_[c], order_.data() + begin, count, buffers_[c]);
      // Only the last batch of an epoch without drop_remainder is short.
      if (count < batch_) out_[c] = buffers_[c].rows(0, count);
    }
  }
  return &out_;
}

}  // namespace sf::dataset
