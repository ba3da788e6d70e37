#include <shardflow/train/loop_checkpoint.h>

#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/resume_from.h>

namespace sf {

LoopCheckpoint::LoopCheckpoint(Model& model, const dataset::Dataset& train_set, LoopCheckpointOptions options) {
  const ParallelMode mode = get_auto_parallel_context().parallel_mode;
  // Model::prepare would build a sharded step of its own and cut the parameters the loop's
  // program already holds in blocks.
  SF_ENFORCE(mode != ParallelMode::kSemiAutoParallel && mode != ParallelMode::kAutoParallel &&
                 model.pipeline_step() == nullptr,
             InvalidArgument,
             "LoopCheckpoint: a hand-written loop checkpoints in stand-alone, data and hybrid parallel, not in {} "
             "(train with Model::train and CheckpointDir there)",
             model.pipeline_step() ? "pipeline parallel" : parallel_mode_name(mode));
  // The RunContext Model::train would hand its callbacks: CheckpointDir saves from it exactly
  // what it saves of a Model::train run.
  ctx_.steps_per_epoch = train_set.get_dataset_size();
  ctx_.optimizer = &model.optimizer();
  ctx_.network = &model.network();
  ctx_.train_dataset = &train_set;
  ctx_.model = &model;
  if (!options.dir.empty()) save_ = std::make_shared<CheckpointDir>(options.dir, options.save_every, options.keep);
}

ResumePoint LoopCheckpoint::begin(const std::string& resume) {
  const ResumePoint from = resume.empty() ? ResumePoint{} : resume_from(*ctx_.model, *ctx_.train_dataset, resume);
  ctx_.dataset_epoch = from.epoch;
  ctx_.epoch = from.epoch;
  ctx_.step_in_epoch = from.step;
  ctx_.global_step = ctx_.optimizer->global_step();
  if (save_) save_->on_train_begin(ctx_);
  return from;
}

void LoopCheckpoint::step_end(int64_t epoch, int64_t steps_done) {
  ctx_.dataset_epoch = epoch;
  ctx_.epoch = epoch + 1;
  ctx_.step_in_epoch = steps_done;
  ctx_.global_step = ctx_.optimizer->global_step();
  if (save_) save_->on_step_end(ctx_);
}

void LoopCheckpoint::end() {
  ctx_.global_step = ctx_.optimizer->global_step();
  if (save_) save_->on_train_end(ctx_);
}

}  // namespace sf
