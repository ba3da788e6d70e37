#include <shardflow/train/loop_checkpoint.h>

#include <shardflow/core/error.h>
#include <shardflow/train/pipeline_step.h>
#include <shardflow/train/resume_from.h>

namespace sf {

LoopCheckpoint::LoopCheckpoint(Model& model, const dataset::Dataset& train_set, LoopCheckpointOptions options) {
  // A pipeline rank's loop would need the stages Model::train runs; a pipeline model whose step
  // is built (Model::prepare) knows the parameters its stages hold, and can save them at a point
  // (train_elastic's save below MIN). Semi-auto and auto parallel work: Model::prepare cuts the
  // parameters to the blocks the loop's own program keeps (the same network and strategies give
  // the same blocks, and cutting again at the same block does nothing), so the state lands in them.
  SF_ENFORCE(model.pipeline_step() == nullptr || model.pipeline_step()->runtime() != nullptr, InvalidArgument,
             "LoopCheckpoint: a hand-written loop does not checkpoint in pipeline parallel (train with Model::train "
             "and CheckpointDir there)");
  // The RunContext Model::train would hand its callbacks: CheckpointDir saves from it exactly
  // what it saves of a Model::train run.
  ctx_.steps_per_epoch = train_set.get_dataset_size();
  ctx_.optimizer = &model.optimizer();
  ctx_.network = &model.network();
  ctx_.train_dataset = &train_set;
  ctx_.model = &model;
  if (!options.dir.empty()) save_ = std::make_shared<CheckpointDir>(options.dir, options.save_every, options.keep);
}

LoopCheckpoint::LoopCheckpoint(Model& model, const dataset::Dataset& train_set, LoopCheckpointOptions options,
                               std::vector<CallbackPtr> callbacks)
    : LoopCheckpoint(model, train_set, std::move(options)) {
  callbacks_ = std::move(callbacks);
}

ResumePoint LoopCheckpoint::begin(const std::string& resume) {
  const ResumePoint from = resume.empty() ? ResumePoint{} : resume_from(*ctx_.model, *ctx_.train_dataset, resume);
  begin_at(from);
  return from;
}

void LoopCheckpoint::begin_at(ResumePoint from) {
  ctx_.dataset_epoch = from.epoch;
  ctx_.epoch = from.epoch;
  ctx_.step_in_epoch = from.step;
  ctx_.global_step = ctx_.optimizer->global_step();
  if (save_) save_->on_train_begin(ctx_);
  for (auto& cb : callbacks_) cb->on_train_begin(ctx_);
}

void LoopCheckpoint::step_end(int64_t epoch, int64_t steps_done) {
  ctx_.dataset_epoch = epoch;
  ctx_.epoch = epoch + 1;
  ctx_.step_in_epoch = steps_done;
  ctx_.global_step = ctx_.optimizer->global_step();
  if (save_) save_->on_step_end(ctx_);
  for (auto& cb : callbacks_) cb->on_step_end(ctx_);
}

void LoopCheckpoint::end() {
  ctx_.global_step = ctx_.optimizer->global_step();
  if (save_) save_->on_train_end(ctx_);
  for (auto& cb : callbacks_) cb->on_train_end(ctx_);
}

}  // namespace sf
