#include <shardflow/train/resume_from.h>

#include <fmt/format.h>

#include <set>

#include <shardflow/comm/rank_context.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/checkpoint/optimizer_tensors.h>
#include <shardflow/train/checkpoint/reader.h>
#include <shardflow/train/rank_local_tensors.h>
#include <shardflow/train/state_mapping.h>
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
  state.scalars = same ? saved : map_state_scalars(saved, train_set, r.rank, r.ranks, saved_ranks, source);
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
