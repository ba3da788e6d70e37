#include <shardflow/train/state_mapping.h>

#include <shardflow/core/error.h>

namespace sf {

nlohmann::json map_state_scalars(nlohmann::json s, const dataset::Dataset& data, int rank, int ranks, int saved_ranks,
                                 const std::string& source) {
  SF_ENFORCE(s.contains("dataset") && s["dataset"].is_object(), InvalidArgument, "{}: scalar 'dataset' is missing",
             source);
  nlohmann::json& d = s["dataset"];
  auto count = [&](const nlohmann::json& o, const char* key, const char* what) {
    SF_ENFORCE(o.contains(key) && o[key].is_number_integer(), InvalidArgument, "{}: scalar '{}{}' is missing", source,
               what, key);
    return o[key].get<int64_t>();
  };
  const int64_t saved_global = count(d, "batch_size", "dataset.") * count(d, "num_shards", "dataset.");
  const int64_t global = data.batch_size() * data.num_shards();
  SF_ENFORCE(saved_global > 0 && global > 0, InvalidArgument, "{}: a dataset position needs batched datasets", source);
  // A shuffle is per shard: it maps when the shards are the same (one whole set on every rank,
  // as semi-auto, auto and pipeline parallel read it, or the same shard count).
  SF_ENFORCE((d.value("shuffle_seed", nlohmann::json()).is_null() && !data.shuffle_seed()) ||
                 count(d, "num_shards", "dataset.") == data.num_shards(),
             InvalidArgument,
             "{}: saved on {} ranks, resumed on {}: a shuffled dataset's position does not map to another rank count "
             "(each shard shuffles its own rows)",
             source, saved_ranks, ranks);
  int64_t epoch = count(s, "epoch", "");
  int64_t step = count(s, "step_in_epoch", "");
  if (saved_global == global) {
    SF_ENFORCE(count(d, "batches_per_epoch", "dataset.") == data.get_dataset_size(), InvalidArgument,
               "{}: saved with {} batches per epoch, resumed with {}; the dataset position does not map", source,
               count(d, "batches_per_epoch", "dataset."), data.get_dataset_size());
  } else {
    // By rows: the first global batch of this configuration that reads no row already read.
    step = (step * saved_global + global - 1) / global;
    if (step >= data.get_dataset_size()) {
      ++epoch;
      step = 0;
    }
  }
  s["epoch"] = epoch;
  s["step_in_epoch"] = step;
  d["batch_size"] = data.batch_size();
  d["batches_per_epoch"] = data.get_dataset_size();
  d["num_rows"] = data.num_rows();
  d["num_shards"] = data.num_shards();
  d["shard_id"] = data.shard_id();
  s["rank"] = rank;
  s["ranks"] = ranks;
  return s;
}

}  // namespace sf
