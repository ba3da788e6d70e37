/// @file
/// Dataset: an in-memory, column-oriented dataset with MindSpore's pipeline calls.
///
/// @code
///   Dataset ds = Dataset::mnist(dir, "train", rank_size, rank_id);
///   ds = ds.map({Rescale(1.0f / 255, 0), Normalize({0.1307f}, {0.3081f}), HWC2CHW()}, "image");
///   ds = ds.map({TypeCast(DType::kI32)}, "label");
///   ds = ds.shuffle(seed).batch(32);
///   for (int64_t epoch = 0; ...) {
///     BatchIterator it = ds.iterator(epoch);
///     while (const std::vector<Tensor>* b = it.next()) { ... (*b)[0] ... }
///   }
/// @endcode
///
/// Each column is one tensor holding every row of this shard (dim 0 = rows), read or generated
/// eagerly when the dataset is made: MNIST-sized sets fit in memory many times over, and an
/// eager pipeline keeps iteration to a gather. Sharding happens at the source (see sharding.h
/// for which rows a shard gets, including the wrap-around padding to equal sizes); map()
/// transforms a whole column at once; shuffle() and batch() only record how iterator() walks
/// the rows: shuffle permutes this shard's rows anew every epoch (see shuffle.h), then batch
/// groups consecutive rows of that order.
///
/// A Dataset is an immutable value: every call returns a new Dataset, and copies share their
/// column storage, so copying is cheap and a Dataset may be read from many threads at once.
/// One thing is not part of the value: the epoch counter (epoch(), set_epoch(), next_epoch();
/// data/epoch_counter.h), the epoch the next walk starts at. Copies of a Dataset share it (a
/// copy is the same dataset, as a second Python reference would be), each reader (rank) keeps
/// its own count in it, and a Dataset derived by map/shuffle/take/batch starts a new one at 0.
/// Model::train walks its epochs through it, so train(1) then train(1) walks epochs 0 and 1,
/// as train(2) does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/data/batch_iterator.h>
#include <shardflow/data/epoch_counter.h>
#include <shardflow/data/transforms.h>

namespace sf::dataset {

/// MindSpore's dataset pipeline: columns of rows, sharded, mapped, shuffled and batched.
class Dataset {
 public:
  /// One tensor per column for source row `index` (MindSpore's random-access GeneratorDataset).
  using RowFn = std::function<std::vector<Tensor>(int64_t index)>;

  /// No columns, no rows.
  Dataset() = default;

  /// Whole columns (dim 0 = rows, the same count in each), sharded as in sharding.h.
  static Dataset from_columns(std::vector<std::string> names, std::vector<Tensor> columns, int num_shards = 1,
                              int shard_id = 0);

  /// MNIST / Fashion-MNIST from IDX files in `dir` (raw or .gz; mnist.cc). usage "train" reads
  /// train-{images-idx3,labels-idx1}-ubyte, "test" t10k-*. Columns: "image", f32 raw pixel
  /// values 0..255 with rows (28, 28, 1) (HWC, as MindSpore yields), and "label", i32.
  /// Refused with an IoError naming the file (and the sample, for a label): an IDX header that
  /// breaks idx_file.h's rules, image and label counts that differ, and a label >= num_classes.
  static Dataset mnist(const std::string& dir, const std::string& usage = "train", int num_shards = 1,
                       int shard_id = 0, int num_classes = 10);
  /// The checks of mnist() on the files (the labels read, the images' header only), nothing
  /// kept: a rank calls it before it joins a job, so a bad dataset stops it at once.
  static void check_mnist(const std::string& dir, const std::string& usage = "train", int num_classes = 10);

  /// Rows fn(i) for the source rows i in [0, num_rows) of this shard, called eagerly
  /// (generator.cc). Every row must give the same shapes and dtypes per column.
  static Dataset generator(const RowFn& fn, int64_t num_rows, std::vector<std::string> column_names, int num_shards = 1,
                           int shard_id = 0);

  /// The dataset with `transforms` applied, in order, to column `column`.
  Dataset map(const std::vector<Transform>& transforms, const std::string& column) const;
  /// Rows in a new order every epoch, derived from (seed, epoch) only. Must precede batch().
  Dataset shuffle(uint64_t seed) const;
  /// The first `count` rows (all when there are fewer), MindSpore's take() before batch().
  Dataset take(int64_t count) const;
  /// Groups of batch_size rows; drop_remainder drops a last, short batch.
  Dataset batch(int64_t batch_size, bool drop_remainder = true) const;

  /// Rows in this shard (after padding).
  int64_t num_rows() const { return num_rows_; }
  /// Batches per epoch (rows if unbatched); MindSpore's name.
  int64_t get_dataset_size() const;
  int64_t batch_size() const { return batch_size_; }  ///< 0 if unbatched
  /// True if batch() drops a last, short batch.
  bool drop_remainder() const { return drop_remainder_; }
  /// The seed of shuffle(); none if the rows are not shuffled.
  std::optional<uint64_t> shuffle_seed() const { return shuffle_seed_; }
  ///@{
  /// How the source was sharded (1 and 0 when it was not): a data-parallel step checks them
  /// against the ranks of its job.
  int num_shards() const { return num_shards_; }
  int shard_id() const { return shard_id_; }
  ///@}

  /// The columns' names, in order.
  const std::vector<std::string>& column_names() const { return names_; }
  /// Position of column `name` in column_names() and in each batch; NotFound if absent.
  int column_index(const std::string& name) const;
  /// The whole column (all rows of this shard, unshuffled, unbatched).
  const Tensor& column(const std::string& name) const { return columns_[column_index(name)]; }
  /// The whole column at `index` in column_names().
  const Tensor& column(int index) const { return columns_.at(index); }

  /// A walk over epoch `epoch` (counted from 0; only a shuffled dataset depends on it). Leaves
  /// the epoch counter alone.
  BatchIterator iterator(int64_t epoch = 0) const;

  /// The reader of a program without ranks (Model::train passes the calling rank).
  static constexpr int kNoReader = -1;
  /// The epoch `reader` walks next with next_epoch(), from 0 (see the counter note above).
  int64_t epoch(int reader = kNoReader) const;
  /// Positions every reader at `epoch` (>= 0, else InvalidArgument). Const: the counter is
  /// shared state of the dataset, not part of its value.
  void set_epoch(int64_t epoch) const;
  /// Positions only `reader` at `epoch`.
  void set_epoch(int64_t epoch, int reader) const;
  /// A walk over epoch(reader), after which reader's counter has moved on by one.
  BatchIterator next_epoch(int reader = kNoReader) const;

 private:
  Dataset(std::vector<std::string> names, std::vector<Tensor> columns);
  Dataset sharded_as(int num_shards, int shard_id) &&;

  std::vector<std::string> names_;
  std::vector<Tensor> columns_;  ///< shared, never written after construction
  int64_t num_rows_ = 0;
  std::optional<uint64_t> shuffle_seed_;
  int64_t batch_size_ = 0;
  bool drop_remainder_ = true;
  int num_shards_ = 1;
  int shard_id_ = 0;
  std::shared_ptr<EpochCounter> epochs_ = std::make_shared<EpochCounter>();  // shared by copies
};

}  // namespace sf::dataset
