/// @file
/// LoopCheckpoint: saving and resuming a hand-written training loop (value_and_grad and an
/// optimizer's step, no Model::train) the way Model::train's CheckpointDir and resume_from do.
/// A loop's checkpoint is the same kind of checkpoint, so it loads into a Model::train run, on
/// another rank count or in sfckpt, and the other way round.
///
/// The loop's network and optimizer are held by a Model that is never trained (it names the
/// state: parameters, optimizer state, this rank's row of moving statistics); the loop reports
/// where it stands after each step, as Model::train's RunContext does:
/// @code
///   sf::Model model(net, loss_fn, optimizer);  // holds the state; the loop trains
///   sf::LoopCheckpoint ckpt(model, data_set, {.dir = "run", .save_every = 30});
///   const sf::ResumePoint from = ckpt.begin(resume_path);  // "" starts at {0, 0}
///   for (int64_t epoch = from.epoch; epoch < epochs; ++epoch) {
///     sf::dataset::BatchIterator it = data_set.iterator(epoch);
///     const int64_t first = epoch == from.epoch ? from.step : 0;
///     it.skip(first);
///     for (int64_t i = first; const auto* batch = it.next(); ++i) {
///       ...  // grad_fn, optimizer->step
///       ckpt.step_end(epoch, i + 1);
///     }
///   }
///   ckpt.end();
/// @endcode
///
/// In stand-alone, data, hybrid, semi-auto and auto parallel. Under semi-auto and auto parallel
/// a resume builds the Model's step first (Model::prepare), which cuts the parameters to the
/// blocks the loop's own program keeps too (the same network and strategies give the same
/// blocks; cutting again at the same block does nothing), so the state lands in them. Not in
/// pipeline parallel, where only Model::train runs the stages; a pipeline model whose step is
/// built (Model::prepare) can save its stages' state at a point (train_elastic's save below MIN).
///
/// Threading: every rank of the job runs its loop and calls these in the same order (a save is
/// a collective), on its own thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <shardflow/data/dataset.h>
#include <shardflow/train/callback.h>
#include <shardflow/train/checkpoint_dir_callback.h>
#include <shardflow/train/model.h>
#include <shardflow/train/resume_point.h>

namespace sf {

/// Where and how often a loop saves (CheckpointDir's arguments).
struct LoopCheckpointOptions {
  std::string dir;         ///< the checkpoint directory; "" saves nothing
  int64_t save_every = 0;  ///< global steps between saves; 0 saves after the last step only
  int keep = 0;            ///< keep the newest `keep` steps; 0 keeps all
};

/// Checkpoints of one rank's hand-written loop (see the file comment).
class LoopCheckpoint {
 public:
  /// `model` holds the loop's network and optimizer, `train_set` is the dataset the loop walks;
  /// both must outlive this object. InvalidArgument for a pipeline model whose step is not built
  /// and for CheckpointDir's bad arguments.
  LoopCheckpoint(Model& model, const dataset::Dataset& train_set, LoopCheckpointOptions options);
  /// The same, also calling `callbacks` where Model::train would call them (on_train_begin at
  /// begin, on_step_end at step_end, on_train_end at end): train_elastic's (train/elastic_train.h)
  /// keep the loop's state and steps.
  LoopCheckpoint(Model& model, const dataset::Dataset& train_set, LoopCheckpointOptions options,
                 std::vector<CallbackPtr> callbacks);
  /// Before the first step: restores the committed checkpoint `resume` names (resume_from: DIR,
  /// its latest step, or DIR/step_N) and returns the point the loop continues at, {0, 0} for
  /// "". Refused as resume_from refuses.
  ResumePoint begin(const std::string& resume);
  /// Before the first step of a loop whose state is already where it starts, at `from` (put back
  /// by train_elastic, say): nothing is restored.
  void begin_at(ResumePoint from);
  /// After each step: the loop has done `steps_done` steps (counted from 1) of dataset epoch
  /// `epoch` (counted from 0); saves when save_every divides the optimizer's global step.
  void step_end(int64_t epoch, int64_t steps_done);
  /// After the last step: saves it, unless it is saved already.
  void end();

 private:
  RunContext ctx_;
  std::shared_ptr<CheckpointDir> save_;  // null without a directory
  std::vector<CallbackPtr> callbacks_;
};

}  // namespace sf
