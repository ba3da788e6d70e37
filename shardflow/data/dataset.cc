#include <shardflow/data/dataset.h>

#include <fmt/format.h>

#include <algorithm>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/data/sharding.h>
#include <shardflow/data/shuffle.h>

namespace sf::dataset {

Dataset::Dataset(std::vector<std::string> names, std::vector<Tensor> columns)
    : names_(std::move(names)), columns_(std::move(columns)) {
  SF_ENFORCE(names_.size() == columns_.size(), InvalidArgument, "Dataset: {} column names ({}) for {} columns",
             names_.size(), brief_names(names_), columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    SF_ENFORCE(std::count(names_.begin(), names_.end(), names_[c]) == 1, InvalidArgument,
               "Dataset: column name '{}' appears more than once", names_[c]);
    const Tensor& col = columns_[c];
    SF_ENFORCE(col.defined() && col.rank() >= 1, ShapeError, "Dataset: column '{}' needs a row dim, got {}", names_[c],
               col.defined() ? col.describe() : "an undefined tensor");
    SF_ENFORCE(col.dim(0) == columns_[0].dim(0), ShapeError, "Dataset: column '{}' has {} rows but column '{}' has {}",
               names_[c], col.dim(0), names_[0], columns_[0].dim(0));
  }
  num_rows_ = columns_.empty() ? 0 : columns_[0].dim(0);
}

Dataset Dataset::from_columns(std::vector<std::string> names, std::vector<Tensor> columns, int num_shards,
                              int shard_id) {
  check_shard_args("Dataset::from_columns", num_shards, shard_id);
  Dataset whole(std::move(names), std::move(columns));
  if (num_shards == 1) return whole;
  const std::vector<int64_t> index = shard_indices(whole.num_rows_, num_shards, shard_id);
  for (Tensor& col : whole.columns_) col = gather_rows(col, index);
  whole.num_rows_ = static_cast<int64_t>(index.size());
  return std::move(whole).sharded_as(num_shards, shard_id);
}

Dataset Dataset::sharded_as(int num_shards, int shard_id) && {
  num_shards_ = num_shards;
  shard_id_ = shard_id;
  return std::move(*this);
}

Dataset Dataset::map(const std::vector<Transform>& transforms, const std::string& column) const {
  const int c = column_index(column);
  Dataset out = *this;
  out.epochs_ = std::make_shared<EpochCounter>();  // a new dataset counts from 0
  Tensor& col = out.columns_[c];
  for (const Transform& t : transforms) {
    // Once a transform has produced fresh storage, the rest of the chain may overwrite it:
    // only the source column is shared with other Datasets.
    const bool fresh = !col.shares_storage(columns_[c]);
    col = apply_transform(t, col, column, fresh);
  }
  return out;
}

Dataset Dataset::shuffle(uint64_t seed) const {
  // Rows are shuffled, not batches: shuffling after batch() would mean something else.
  SF_ENFORCE(batch_size_ == 0, InvalidArgument,
             "shuffle(seed={}): the dataset is already batched (batch_size = {}); call shuffle before batch", seed,
             batch_size_);
  Dataset out = *this;
  out.epochs_ = std::make_shared<EpochCounter>();  // a new dataset counts from 0
  out.shuffle_seed_ = seed;
  return out;
}

Dataset Dataset::take(int64_t count) const {
  SF_ENFORCE(count >= 0, InvalidArgument, "take: count must be >= 0, got {}", count);
  SF_ENFORCE(batch_size_ == 0, InvalidArgument, "take({}): the dataset is already batched; call take before batch",
             count);
  Dataset out = *this;
  out.epochs_ = std::make_shared<EpochCounter>();  // a new dataset counts from 0
  out.num_rows_ = std::min(count, num_rows_);
  for (Tensor& c : out.columns_) c = c.rows(0, out.num_rows_);
  return out;
}

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  SF_ENFORCE(batch_size >= 1, InvalidArgument, "batch: batch_size must be >= 1, got {}", batch_size);
  SF_ENFORCE(batch_size_ == 0, InvalidArgument, "batch({}): the dataset is already batched (batch_size = {})",
             batch_size, batch_size_);
  Dataset out = *this;
  out.epochs_ = std::make_shared<EpochCounter>();  // a new dataset counts from 0
  out.batch_size_ = batch_size;
  out.drop_remainder_ = drop_remainder;
  return out;
}

int64_t Dataset::get_dataset_size() const {
  if (batch_size_ == 0) return num_rows_;
  return drop_remainder_ ? num_rows_ / batch_size_ : (num_rows_ + batch_size_ - 1) / batch_size_;
}

int Dataset::column_index(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  SF_ENFORCE(it != names_.end(), NotFound, "dataset has no column '{}' (columns: {})", brief_text(name, 80),
             brief_names(names_));
  return static_cast<int>(it - names_.begin());
}

BatchIterator Dataset::iterator(int64_t epoch) const {
  std::vector<int64_t> order;
  if (shuffle_seed_) order = epoch_permutation(num_rows_, *shuffle_seed_, epoch);
  return BatchIterator(columns_, batch_size_, drop_remainder_, std::move(order));
}

int64_t Dataset::epoch(int reader) const { return epochs_->get(reader); }

void Dataset::set_epoch(int64_t epoch) const {
  SF_ENFORCE(epoch >= 0, InvalidArgument, "Dataset::set_epoch: epoch must be >= 0, got {}", epoch);
  epochs_->set_all(epoch);
}

void Dataset::set_epoch(int64_t epoch, int reader) const {
  SF_ENFORCE(epoch >= 0, InvalidArgument, "Dataset::set_epoch: epoch must be >= 0, got {} (reader {})", epoch, reader);
  epochs_->set(reader, epoch);
}

BatchIterator Dataset::next_epoch(int reader) const {
  const int64_t e = epochs_->get(reader);
  epochs_->set(reader, e + 1);
  return iterator(e);
}

}  // namespace sf::dataset
