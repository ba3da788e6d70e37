#include <shardflow/train/resume_from.h>

#include <fmt/format.h>

#include <set>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/checkpoint/optimizer_tensors.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/rank_local_tensors.h>
#include <shardflow/train/training_state.h>

namespace sf {

using detail::local_row;
using detail::rank_local_names;
using detail::rank_row;
using detail::Row;

namespace {

struct Rank {
  int rank = 0;
  int ranks = 1;
};
Rank this_rank() {
  const comm::RankContext* r = comm::current_rank_or_null();
  return r ? Rank{r->rank(), r->size()} : Rank{};
}

// The saving rank 0's scalars made this rank's, when the rank count or mode differs: the dataset
// position maps only for the same global batch and batches per epoch, and a shuffled one only
// for the same shards (see train/training_checkpoint.h).
nlohmann::json mapped_scalars(nlohmann::json s, const dataset::Dataset& data, Rank r, int saved_ranks,
                              const std::string& source) {
  SF_ENFORCE(s.contains("dataset") && s["dataset"].is_object(), InvalidArgument, "{}: scalar 'dataset' is missing",
             source);
  nlohmann::json& d = s["dataset"];
  auto count = [&](const char* key) {
    SF_ENFORCE(d.contains(key) && d[key].is_number_integer(), InvalidArgument, "{}: scalar 'dataset.{}' is missing",
               source, key);
    return d[key].get<int64_t>();
  };
  const int64_t saved_global = count("batch_size") * count("num_shards");
  const int64_t global = data.batch_size() * data.num_shards();
  SF_ENFORCE(saved_global == global, InvalidArgument,
             "{}: saved on {} ranks with a global batch of {} rows, resumed on {} with {}; the dataset position maps "
             "to another rank count only with the same global batch",
             source, saved_ranks, saved_global, r.ranks, global);
  SF_ENFORCE(count("batches_per_epoch") == data.get_dataset_size(), InvalidArgument,
             "{}: saved with {} batches per epoch, resumed with {}; the dataset position does not map", source,
             count("batches_per_epoch"), data.get_dataset_size());
  // A shuffle is per shard: it maps when the shards are the same (one whole set on every rank,
  // as semi-auto, auto and pipeline parallel read it, or the same shard count).
  SF_ENFORCE((d.value("shuffle_seed", nlohmann::json()).is_null() && !data.shuffle_seed()) ||
                 count("num_shards") == data.num_shards(),
             InvalidArgument,
             "{}: saved on {} ranks, resumed on {}: a shuffled dataset's position does not map to another rank count "
             "(each shard shuffles its own rows)",
             source, saved_ranks, r.ranks);
  d["batch_size"] = data.batch_size();
  d["num_rows"] = data.num_rows();
  d["num_shards"] = data.num_shards();
  d["shard_id"] = data.shard_id();
  s["rank"] = r.rank;
  s["ranks"] = r.ranks;
  return s;
}

}  // namespace

ResumePoint resume_from(Model& model, const dataset::Dataset& train_set, const std::string& path) {
  ckpt::CheckpointReader ckpt(path);
  const std::string source = fmt::format("checkpoint '{}'", ckpt.step_dir());
  const Rank r = this_rank();
  const std::string mode(parallel_mode_name(get_auto_parallel_context().parallel_mode));
  const int saved_ranks = ckpt.manifest().world_size;
  // The same configuration (rank count and mode) takes each rank's own state; any other maps
  // the saving rank 0's.
  const bool same = saved_ranks == r.ranks && ckpt.manifest().parallel_mode == mode;
  const nlohmann::json& saved = same ? ckpt.rank_state(r.rank) : ckpt.state();
  SF_ENFORCE(saved.is_object(), InvalidArgument,
             "{} holds no training state (it was not saved by CheckpointDir or --checkpoint-dir)", source);

  TrainingState state;
  state.scalars = same ? saved : mapped_scalars(saved, train_set, r, saved_ranks, source);
  // The step is built first: under semi-auto and auto parallel the parameters are then cut to
  // their blocks, so that each rank reads only its blocks; a pipeline rank then knows the
  // parameters its stages hold, and reads only those.
  model.prepare(train_set);
  nn::Optimizer& optimizer = model.optimizer();
  const ParameterList params = model.network().get_parameters();
  std::vector<ckpt::ShardedTensor> want;
  for (const Parameter& p : model.held_parameters()) want.push_back(ckpt::parameter_block(p.name(), p.value(), params));
  for (const auto& [name, t] : optimizer.state()) want.push_back(ckpt::parameter_block(name, t, params));
  want.push_back(ckpt::ShardedTensor::whole("global_step", Tensor::from_vector({}, std::vector<int32_t>{0})));
  std::vector<ckpt::WantedTensor> wanted;
  for (const ckpt::ShardedTensor& t : want) wanted.push_back({t.name, t.global, t.local.dtype()});
  ckpt.check_tensors(wanted, /*allow_unexpected=*/true);

  // Each rank's (replica's) own moving statistics, where the saving job kept the same rows.
  const Row row = local_row(model);
  const std::set<std::string> own = same ? rank_local_names(model) : std::set<std::string>{};
  for (const ckpt::ShardedTensor& t : want) {
    if (own.count(t.name)) {
      const ckpt::ShardedTensor mine = rank_row(t.name, t.local, row);
      const ckpt::TensorEntry* saved_row = ckpt.manifest().find(mine.name);
      if (saved_row && saved_row->shape == mine.global) {
        state.tensors.emplace_back(t.name, ckpt.read(mine.name, mine.layout, mine.layout_rank).view(t.local.shape()));
        continue;
      }
    }
    state.tensors.emplace_back(t.name, ckpt.read(t.name, t.layout, t.layout_rank));
  }
  return restore_training_state(model, train_set, state, source);
}

}  // namespace sf
