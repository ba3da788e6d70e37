#include <shardflow/train/checkpoint_dir_callback.h>

#include <set>
#include <utility>

#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/checkpoint/optimizer_tensors.h>
#include <shardflow/train/checkpoint/save.h>
#include <shardflow/train/rank_local_tensors.h>
#include <shardflow/train/training_state.h>

namespace sf {

using detail::local_row;
using detail::rank_local_names;
using detail::rank_row;
using detail::Row;

CheckpointDir::CheckpointDir(std::string dir, int64_t save_every, int keep, bool async)
    : dir_(std::move(dir)),
      save_every_(save_every),
      keep_(keep),
      writer_(async ? std::make_unique<ckpt::AsyncCheckpointWriter>() : nullptr) {
  SF_ENFORCE(!dir_.empty(), InvalidArgument, "CheckpointDir: the checkpoint directory must not be empty");
  SF_ENFORCE(save_every_ >= 0, InvalidArgument, "CheckpointDir: save_every must be >= 0, got {}", save_every_);
  SF_ENFORCE(keep_ >= 0, InvalidArgument, "CheckpointDir: keep must be >= 0, got {}", keep_);
}

void CheckpointDir::on_train_begin(const RunContext& ctx) { last_ = ctx.global_step; }

void CheckpointDir::on_step_end(const RunContext& ctx) {
  if (save_every_ > 0 && ctx.global_step % save_every_ == 0) save(ctx);
}

void CheckpointDir::on_train_end(const RunContext& ctx) {
  if (ctx.global_step != last_) save(ctx);
  wait();
}

void CheckpointDir::wait() {
  if (!writer_ || in_flight_ < 0) return;
  const int64_t step = in_flight_;
  in_flight_ = -1;  // over either way: a failed save is not waited for twice
  writer_->wait();
  saved_.push_back(step);
}

void CheckpointDir::save(const RunContext& ctx) {
  SF_ENFORCE(ctx.model, InvalidArgument, "CheckpointDir: a callback of Model::train (its RunContext has no model)");
  const TrainingState state = capture_training_state(ctx);
  const ParameterList params = ctx.network->get_parameters();
  const Row r = local_row(*ctx.model);
  const std::set<std::string> own = rank_local_names(*ctx.model);
  std::vector<ckpt::ShardedTensor> tensors;
  for (const auto& [name, t] : state.tensors) {
    tensors.push_back(ckpt::parameter_block(name, t, params));
    if (own.count(name)) tensors.push_back(rank_row(name, t, r));
  }
  const ckpt::SaveOptions options{
      .step = ctx.global_step,
      .parallel_mode = std::string(parallel_mode_name(get_auto_parallel_context().parallel_mode)),
      .state = state.scalars,
      .rank_state = state.scalars,
      .keep = keep_};
  if (writer_) {
    wait();  // the save in flight commits first (a second save completes the first)
    writer_->save_owned(dir_, tensors, options);  // capture_training_state's clones: no second copy
    in_flight_ = ctx.global_step;
  } else {
    ckpt::save_checkpoint_dir(dir_, tensors, options);
    saved_.push_back(ctx.global_step);
  }
  last_ = ctx.global_step;
}

}  // namespace sf
