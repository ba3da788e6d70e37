#include <shardflow/train/resume_from.h>

#include <fmt/format.h>

#include <set>

#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/checkpoint/optimizer_tensors.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/rank_local_tensors.h>
#include <shardflow/train/training_state.h>

namespace sf {

using detail::kRankLocal;
using detail::Rank;
using detail::rank_row;
using detail::this_rank;
using detail::unstepped;

namespace {

// The saving rank's scalars made this rank's, when the rank counts differ: the dataset position
// maps only for the same global batch, batches per epoch and no shuffle (see the header).
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
  SF_ENFORCE(d.value("shuffle_seed", nlohmann::json()).is_null() && !data.shuffle_seed(), InvalidArgument,
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
  const ParallelMode mode = get_auto_parallel_context().parallel_mode;
  SF_ENFORCE(mode != ParallelMode::kSemiAutoParallel && mode != ParallelMode::kAutoParallel, InvalidArgument,
             "resume from '{}': resuming a {} model is not supported yet (its first step generates the parameter "
             "blocks anew, overwriting what was loaded)",
             path, parallel_mode_name(mode));
  SF_ENFORCE(!model.pipeline_step(), InvalidArgument,
             "resume from '{}': resuming a pipeline parallel model is not supported yet", path);
  ckpt::CheckpointReader ckpt(path);
  const std::string source = fmt::format("checkpoint '{}'", ckpt.step_dir());
  const Rank r = this_rank();
  const int saved_ranks = ckpt.manifest().world_size;
  const bool same = saved_ranks == r.ranks;
  const nlohmann::json& saved = same ? ckpt.rank_state(r.rank) : ckpt.state();
  SF_ENFORCE(saved.is_object(), InvalidArgument,
             "{} holds no training state (it was not saved by CheckpointDir or --checkpoint-dir)", source);

  TrainingState state;
  state.scalars = same ? saved : mapped_scalars(saved, train_set, r, saved_ranks, source);
  nn::Cell& net = model.network();
  nn::Optimizer& optimizer = model.optimizer();
  const ParameterList params = net.get_parameters();
  std::vector<ckpt::ShardedTensor> want;
  for (const Parameter& p : params) want.push_back(ckpt::parameter_block(p.name(), p.value(), params));
  for (const auto& [name, t] : optimizer.state()) want.push_back(ckpt::parameter_block(name, t, params));
  want.push_back(ckpt::ShardedTensor::whole("global_step", Tensor::from_vector({}, std::vector<int32_t>{0})));
  std::vector<ckpt::WantedTensor> wanted;
  for (const ckpt::ShardedTensor& t : want) wanted.push_back({t.name, t.global, t.local.dtype()});
  ckpt.check_tensors(wanted, /*allow_unexpected=*/true);

  const std::set<std::string> own = same && r.ranks > 1 ? unstepped(net, optimizer) : std::set<std::string>{};
  for (const ckpt::ShardedTensor& t : want) {
    if (own.count(t.name) && ckpt.has(kRankLocal + t.name)) {
      const ckpt::ShardedTensor row = rank_row(t.name, t.local, r);
      state.tensors.emplace_back(t.name, ckpt.read(row.name, row.layout, row.layout_rank).view(t.local.shape()));
    } else {
      state.tensors.emplace_back(t.name, ckpt.read(t.name, t.layout, t.layout_rank));
    }
  }
  return restore_training_state(model, train_set, state, source);
}

}  // namespace sf
