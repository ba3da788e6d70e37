#include <shardflow/data/sharding.h>

#include <algorithm>
#include <cstring>

#include <shardflow/core/error.h>

namespace sf::dataset {

void check_shard_args(const std::string& who, int num_shards, int shard_id) {
  SF_ENFORCE(num_shards >= 1, InvalidArgument, "{}: num_shards must be >= 1, got {}", who, num_shards);
  SF_ENFORCE(shard_id >= 0 && shard_id < num_shards, InvalidArgument,
             "{}: shard_id must be in [0, {}) for num_shards = {}, got {}", who, num_shards, num_shards, shard_id);
}

int64_t shard_size(int64_t num_rows, int num_shards) { return (num_rows + num_shards - 1) / num_shards; }

std::vector<int64_t> shard_indices(int64_t num_rows, int num_shards, int shard_id) {
  check_shard_args("shard_indices", num_shards, shard_id);
  const int64_t m = shard_size(num_rows, num_shards);
  std::vector<int64_t> index(static_cast<size_t>(m));
  // Position j of shard k is element k + j*n of the padded sequence 0..N-1, 0, 1, ...
  for (int64_t j = 0; j < m; ++j) index[j] = (shard_id + j * num_shards) % num_rows;
  return index;
}

Tensor gather_rows(const Tensor& src, const std::vector<int64_t>& index) {
  SF_ENFORCE(src.rank() >= 1, ShapeError, "gather_rows: tensor {} has no row dim", src.describe());
  Shape shape = src.shape();
  shape[0] = static_cast<int64_t>(index.size());
  Tensor out(shape, src.dtype());
  gather_rows_into(src, index.data(), static_cast<int64_t>(index.size()), out);
  return out;
}

void gather_rows_into(const Tensor& src, const int64_t* index, int64_t count, Tensor& dst) {
  const int64_t n = src.rank() >= 1 ? src.dim(0) : 0;
  const int64_t row_elems = n > 0 ? src.numel() / n : 0;
  const bool same_rows = dst.rank() == src.rank() && src.rank() >= 1 &&
                         std::equal(src.shape().begin() + 1, src.shape().end(), dst.shape().begin() + 1);
  SF_ENFORCE(dst.dtype() == src.dtype() && same_rows && count <= dst.dim(0), ShapeError,
             "gather_rows: cannot gather {} rows of {} into {}", count, src.describe(), dst.describe());
  const size_t row_bytes = static_cast<size_t>(row_elems) * dtype_size(src.dtype());
  const auto* from = static_cast<const std::byte*>(src.raw());
  auto* to = static_cast<std::byte*>(dst.raw());
  for (int64_t i = 0; i < count; ++i) {
    SF_ENFORCE(index[i] >= 0 && index[i] < n, ShapeError, "gather_rows: row {} out of range for {}", index[i],
               src.describe());
    std::memcpy(to + i * row_bytes, from + index[i] * row_bytes, row_bytes);
  }
}

}  // namespace sf::dataset
