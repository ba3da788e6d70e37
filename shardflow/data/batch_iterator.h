/// @file
/// One epoch's walk over a Dataset, one batch at a time.
///
/// Made by Dataset::iterator(epoch). next() returns one tensor per column with the batch dim
/// first (image (32, 1, 28, 28) f32, label (32,) i32), or nullptr after the last batch. An
/// unbatched dataset yields single rows without a batch dim.
///
/// Ownership and lifetime: the iterator holds references to the dataset's (immutable) columns,
/// so it stays valid after the Dataset is gone. The tensors next() returns are valid only until
/// the next call to next(): for a shuffled dataset they are buffers owned by the iterator,
/// allocated once and refilled (gathered) every step, so a step allocates nothing; without
/// shuffle they are views on the columns (no copy; each view costs one small shape vector).
/// They are read-only: writing through a view would change the dataset. A caller that keeps a
/// batch past the next step must clone() it.
/// Not thread-safe: an iterator belongs to one consumer thread; make one per thread or rank.
#pragma once

#include <cstdint>
#include <vector>

#include <shardflow/core/tensor.h>

namespace sf::dataset {

/// One epoch's walk over a Dataset, one batch at a time.
class BatchIterator {
 public:
  /// columns: whole columns (dim 0 = rows, all equal); batch_size 0 = unbatched; order: the
  /// row order of this epoch, or empty for rows 0..N-1 in sequence.
  BatchIterator(std::vector<Tensor> columns, int64_t batch_size, bool drop_remainder, std::vector<int64_t> order);

  ///@{
  /// Movable; not copyable.
  BatchIterator(BatchIterator&&) = default;
  BatchIterator& operator=(BatchIterator&&) = default;
  ///@}
  BatchIterator(const BatchIterator&) = delete;
  BatchIterator& operator=(const BatchIterator&) = delete;

  /// The next batch, or nullptr when the epoch is over. See the lifetime note above.
  const std::vector<Tensor>* next();
  /// Moves past the next `count` batches without reading them, so that next() returns the
  /// batch it would have returned after `count` calls: a run resumed within an epoch
  /// (Model::train's ResumePoint). 0 <= count <= the batches left, else InvalidArgument.
  void skip(int64_t count);

  ///@{
  /// Batches in this epoch, and how many next() has returned so far.
  int64_t num_batches() const { return num_batches_; }
  int64_t batches_done() const { return step_; }
  ///@}

 private:
  std::vector<Tensor> columns_;
  std::vector<int64_t> order_;  ///< empty: sequential, return views
  int64_t rows_ = 0;
  int64_t batch_ = 1;     ///< rows per batch (1 when unbatched)
  bool squeeze_ = false;  ///< unbatched: drop the batch dim
  int64_t num_batches_ = 0;
  int64_t step_ = 0;
  std::vector<Shape> row_shapes_;
  std::vector<Tensor> buffers_;  ///< shuffled: (batch_, row...) per column, reused every step
  std::vector<Tensor> out_;      ///< what next() hands out
};

}  // namespace sf::dataset
