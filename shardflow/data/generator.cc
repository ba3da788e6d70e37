// Dataset::generator: rows from a user function -> columns of one shard.
#include <fmt/format.h>

#include <cstring>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/data/dataset.h>
#include <shardflow/data/sharding.h>

namespace sf::dataset {

namespace {

constexpr const char* kWho = "GeneratorDataset";

std::string describe_row(const Tensor& t) { return fmt::format("{} {}", dtype_name(t.dtype()), brief_shape(t.shape())); }

}  // namespace

Dataset Dataset::generator(const RowFn& fn, int64_t num_rows, std::vector<std::string> column_names, int num_shards,
                           int shard_id) {
  check_shard_args(kWho, num_shards, shard_id);
  SF_ENFORCE(static_cast<bool>(fn), InvalidArgument, "{}: the row function is empty", kWho);
  SF_ENFORCE(num_rows >= 0, InvalidArgument, "{}: num_rows must be >= 0, got {}", kWho, num_rows);
  SF_ENFORCE(!column_names.empty(), InvalidArgument, "{}: needs at least one column name", kWho);

  const std::vector<int64_t> index = shard_indices(num_rows, num_shards, shard_id);
  const auto rows = static_cast<int64_t>(index.size());
  const size_t ncols = column_names.size();
  std::vector<Tensor> columns(ncols);
  std::vector<Tensor> first(ncols);  // row 0 of this shard, the shape every row must match
  for (int64_t j = 0; j < rows; ++j) {
    std::vector<Tensor> row = fn(index[j]);
    SF_ENFORCE(row.size() == ncols, InvalidArgument, "{}: row {} has {} tensors for {} columns ({})", kWho, index[j],
               row.size(), ncols, brief_names(column_names));
    for (size_t c = 0; c < ncols; ++c) {
      const Tensor& t = row[c];
      SF_ENFORCE(t.defined(), InvalidArgument, "{}: column '{}' row {} is an undefined tensor", kWho, column_names[c],
                 index[j]);
      if (j == 0) {
        first[c] = t;
        Shape shape = t.shape();
        shape.insert(shape.begin(), rows);
        columns[c] = Tensor(shape, t.dtype());
      }
      SF_ENFORCE(t.dtype() == first[c].dtype() && t.shape() == first[c].shape(), ShapeError,
                 "{}: column '{}' row {} is {} but row {} was {}", kWho, column_names[c], index[j], describe_row(t),
                 index[0], describe_row(first[c]));
      std::memcpy(static_cast<std::byte*>(columns[c].raw()) + j * t.nbytes(), t.raw(), t.nbytes());
    }
  }
  if (rows == 0)  // nothing to learn shapes from: empty f32 columns
    for (Tensor& col : columns) col = Tensor(Shape{0}, DType::kF32);
  return Dataset(std::move(column_names), std::move(columns)).sharded_as(num_shards, shard_id);
}

}  // namespace sf::dataset
