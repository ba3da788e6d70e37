/// @file
/// Model: MindSpore's high-level training API. train() runs epochs over a batched dataset
/// (column 0 = data, column 1 = label) on the actor runtime and calls the callbacks; eval()
/// reports accuracy. As MindSpore's TrainOneStepCell, a plain SGD step is compiled into the
/// training graph (train/sgd_in_graph.h); other optimizers step on the gradients it fetches.
///
/// Parallel modes (parallel/context.h, read when the model is constructed, on a thread bound to
/// a rank): in data-parallel and hybrid-parallel mode the step AllReduces the gradients in
/// buckets while backward runs (train/grad_buckets.h), divided by the number of ranks when
/// gradients_mean, before the optimizer uses them; the SGD update then reads the reduced
/// gradient instead of fusing with the gradient's GEMM. In data-parallel mode the training set
/// must be sharded over the ranks (num_shards = group size, shard_id = rank), checked before
/// the first step. The loss each rank reports is its own shard's (as MindSpore prints it).
/// In semi-auto parallel mode each rank runs its part of the sharded network
/// (train/semi_auto_step.h): every rank reads the whole dataset and is fed its block of each
/// batch, holds only its blocks of the parameters, and reports the global loss; the optimizer
/// steps on the fetched gradient blocks, told where they lie (Optimizer::set_grad_placement), so
/// that clipping by global norm (Optimizer::set_max_grad_norm) counts each block once over the
/// world, as one device would; clipping is refused in pipeline parallel. eval_accuracy there
/// gathers the parameter blocks (train/gather_parameters.h) and evaluates the whole network on
/// every rank, which then all report the accuracy one device would with the same parameters.
/// A network that updates state in its forward (BatchNorm's moving statistics) has every
/// parameter bound, trainable or not, and the updates run each training step; it is refused
/// with ExecOptions that split a batch into row blocks, each of which would update them.
///
/// @code
///   sf::Model model(net, sf::nn::CrossEntropyLoss(), sf::nn::SGD(net.trainable_params(), 1e-2f));
///   model.train(1, train_set, {std::make_shared<sf::LossMonitor>(100)});
/// @endcode
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/data/dataset.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/callback.h>
#include <shardflow/train/cell.h>
#include <shardflow/train/grad_reducer.h>
#include <shardflow/train/losses.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/pipeline_cell.h>
#include <shardflow/train/pipeline_step.h>
#include <shardflow/train/resume_point.h>
#include <shardflow/train/semi_auto_step.h>
#include <shardflow/train/value_and_grad.h>

namespace sf {

/// MindSpore's Model: trains a network with a loss and an optimizer, and evaluates it.
class Model {
 public:
  /// For evaluation only (MindSpore's Model(net)): eval_accuracy() works, train() is refused.
  /// With load_param_into_net() this evaluates a checkpoint without building an optimizer.
  explicit Model(nn::Cell& net);
  /// `net` must outlive the model. Throws InvalidArgument, naming it, for an optimizer
  /// parameter that is not one of net's, and for a parallel mode it does not support.
  Model(nn::Cell& net, std::shared_ptr<nn::LossFn> loss, std::shared_ptr<nn::Optimizer> optimizer,
        ExecOptions opts = {});
  /// As above, with copies of `loss` and `optimizer`: Model(net, CrossEntropyLoss(), SGD(...)).
  template <class Loss, class Opt,
            class = std::enable_if_t<std::is_base_of_v<nn::LossFn, Loss> && std::is_base_of_v<nn::Optimizer, Opt>>>
  Model(nn::Cell& net, Loss loss, Opt optimizer, ExecOptions opts = {})
      : Model(net, std::make_shared<Loss>(std::move(loss)), std::make_shared<Opt>(std::move(optimizer)), opts) {}

  /// Pipeline parallel (train/pipeline_cell.h): trains `net`'s network on the stages of the
  /// calling rank with pipeline_stages, pipeline_scheduler and pipeline_interleave from the
  /// parallel context; the optimizer holds this rank's parameters
  /// (net.infer_param_pipeline_stage()). Throws InvalidArgument for a configuration
  /// PipelineStep refuses (train/pipeline_step.h), before any communication. With opts.trace
  /// every step gathers the measured timeline of the stages (pipeline_step()->runtime()).
  Model(nn::PipelineCell& net, std::shared_ptr<nn::Optimizer> optimizer, ExecOptions opts = {});
  /// Pipeline parallel, with a copy of `optimizer`.
  template <class Opt, class = std::enable_if_t<std::is_base_of_v<nn::Optimizer, Opt>>>
  Model(nn::PipelineCell& net, Opt optimizer, ExecOptions opts = {})
      : Model(net, std::make_shared<Opt>(std::move(optimizer)), opts) {}

  /// Trains up to epoch `epochs` over the batched `train_set`, calling `callbacks` around each
  /// step and epoch (MindSpore's Model.train(epoch, train_dataset, callbacks, initial_epoch)):
  /// `epochs` is the total count and `initial_epoch` (0 <= initial_epoch < epochs, else
  /// InvalidArgument) the epoch to start at, so epochs initial_epoch+1 .. epochs run, and the
  /// callbacks see those numbers (RunContext::epoch). The dataset's walk continues from its
  /// epoch counter for the calling rank (data/dataset.h: train(1) then train(1) sees the
  /// shuffles of train(2)); initial_epoch > 0 positions it at initial_epoch first, so a run
  /// resumed from the epoch-`initial_epoch` checkpoint (load_into) trains exactly as the
  /// uninterrupted one. The same holds in every parallel mode. A dataset reused for a new,
  /// independent run goes on counting: call set_epoch(0) on it (or build it anew) first.
  void train(int64_t epochs, const dataset::Dataset& train_set, const std::vector<CallbackPtr>& callbacks = {},
             int64_t initial_epoch = 0);
  /// Trains from `from`, which may lie within an epoch (train/resume_point.h): the rest of
  /// dataset epoch from.epoch (its first from.step batches skipped, not read), then epochs
  /// from.epoch+2 .. `epochs`, so that a run resumed at the point a callback captured
  /// (train/training_state.h) walks exactly the batches the uninterrupted run walked next.
  /// from = {e, 0} is train(epochs, train_set, callbacks, e): the dataset is positioned at
  /// from.epoch when from is not {0, 0}. The callbacks see the resumed epoch as from.epoch + 1:
  /// on_train_begin and on_epoch_begin with step_in_epoch = from.step, then on_step_end from
  /// step from.step + 1 on, as in the uninterrupted run. Throws InvalidArgument, before any
  /// step, for from.epoch outside [0, epochs) or from.step outside [0, steps per epoch).
  ///
  ///   model.train(2, data, callbacks, sf::restore_training_state(model, data, state));
  ///   model.train(2, data, callbacks, sf::resume_from(model, data, "run"));  // a checkpoint
  ///                                   // directory saved by sf::CheckpointDir (train/training_checkpoint.h)
  void train(int64_t epochs, const dataset::Dataset& train_set, const std::vector<CallbackPtr>& callbacks,
             ResumePoint from);
  /// Fraction of rows whose argmax of the network output equals the label. In semi-auto and
  /// auto parallel mode a collective: every rank calls it, on its thread, with the same data.
  double eval_accuracy(const dataset::Dataset& eval_set);

  /// Builds the training step for `train_set`'s batches without taking one, so that a saved
  /// state can be loaded into it (sf::resume_from does): in semi-auto and auto parallel the
  /// trainable parameters are cut to this rank's blocks, as the first step would (the
  /// optimizer's state takes their shapes); in pipeline parallel the network is split into
  /// stages and this rank's parameters are known (held_parameters()). Nothing to do in the other
  /// modes. In those two modes every rank calls it, as it would take its first step (groups are
  /// made). Throws InvalidArgument for a dataset that is not batched or has no batch.
  void prepare(const dataset::Dataset& train_set);
  /// The parameters this rank holds and keeps current: every parameter of the network, except
  /// in pipeline parallel, where they are those its stages read (the optimizer's before the
  /// first step or prepare()); the others are stale copies another rank trains.
  ParameterList held_parameters();
  /// Pipeline parallel: this rank's data-parallel replica of its stages and their count
  /// ({0, 1} before the first step or prepare()); otherwise the rank and the rank count.
  std::pair<int, int> replica() const;
  /// The optimizer that updates the parameters.
  nn::Optimizer& optimizer() { return *optimizer_; }
  /// The network it trains (for a pipeline, the whole network of the PipelineCell).
  nn::Cell& network() { return net_; }
  /// The training program of the last step (its graph is the IR to print, its runtime the trace).
  Program* train_program() { return semi_ ? &semi_->last()->program : train_step_.last(); }
  /// Semi-auto parallel: the last step's global graph, sharding and local graph (else nullptr).
  SemiAutoProgram* semi_auto_program() { return semi_ ? semi_->last() : nullptr; }
  /// Pipeline parallel: the step (else nullptr).
  PipelineStep* pipeline_step() { return pipeline_.get(); }

 private:
  /// The epochs of train() with their callbacks around `run_epoch`, which walks one epoch's
  /// batches and calls step_done(loss) after each step (on whichever thread runs the step).
  using StepDone = std::function<void(float loss)>;
  using EpochFn = std::function<void(dataset::BatchIterator& it, const StepDone& step_done)>;
  void run_epochs(int64_t epochs, ResumePoint from, const dataset::Dataset& train_set,
                  const std::vector<CallbackPtr>& callbacks, const EpochFn& run_epoch);

  nn::Cell& net_;
  std::shared_ptr<nn::LossFn> loss_;
  std::shared_ptr<nn::Optimizer> optimizer_;
  ExecOptions opts_;
  ParallelMode mode_ = ParallelMode::kStandAlone;
  std::optional<nn::GradReduceSpec> reduce_;  ///< data/hybrid parallel over more than one rank
  ProgramCache train_step_;  ///< fetches: loss, then gradients or in-graph SGD updates
  bool in_graph_sgd_ = false;  ///< whether train_step_'s programs run the SGD update (once built)
  std::unique_ptr<SemiAutoStep> semi_;  ///< semi-auto parallel: used instead of train_step_
  std::unique_ptr<ForwardFunction> forward_fn_;
  std::unique_ptr<PipelineStep> pipeline_;  ///< pipeline parallel: used instead of train_step_
};

}  // namespace sf
