/// @file
/// TrainingState: everything one rank's run depends on, captured after any step and restored
/// into a new network, optimizer and dataset, so that the resumed run continues bitwise equal to
/// the uninterrupted one on the same configuration. It is independent of any file format: named
/// tensors plus a JSON object of scalars, which a checkpoint writer stores as they are.
///
/// What a rank's run depends on, and where each part goes:
/// - every parameter of the network, trainable or not (BatchNorm's moving statistics), and the
///   optimizer's state tensors (momentum's "moments.<p>", Adam's "moment1.<p>", "moment2.<p>"):
///   `tensors`, as checkpoint_entries() names them, with "global_step";
/// - the optimizer's step count (Adam's bias correction reads it; no learning-rate schedule
///   exists, so it is the schedule's position too), its kind and hyper-parameters:
///   scalars["global_step"], scalars["optimizer"];
/// - the dataset's position: the epoch the next step reads and the steps of it done, with the
///   shuffle seed and the batching that make "the next batch" mean the same batch:
///   scalars["epoch"], scalars["step_in_epoch"], scalars["dataset"];
/// - random numbers: core/rng.h is counter-based and stateless, and nothing draws during
///   training (no dropout exists; a shuffle is a function of (shuffle seed, epoch)), so the only
///   mutable RNG state is the global seed (set_seed), which initialises parameters:
///   scalars["rng"]["seed"];
/// - the rank and the number of ranks it was captured on, for the reader: scalars["rank"],
///   scalars["ranks"].
///
/// Capture from a callback, at any hook (RunContext carries the network, optimizer, dataset
/// and position):
/// @code
///   struct Snapshot : sf::Callback {
///     void on_step_end(const sf::RunContext& ctx) override {
///       if (ctx.global_step == 37) state = sf::capture_training_state(ctx);
///     }
///     sf::TrainingState state;
///   };
///   ...  // a new program: network, Model, dataset built as before
///   model.train(epochs, data, callbacks, sf::restore_training_state(model, data, state));
/// @endcode
///
/// Threading: capture and restore on the thread of the rank that owns the network, between
/// steps (a callback is); the tensors captured are copies, so training may go on.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <shardflow/data/dataset.h>
#include <shardflow/train/callback.h>
#include <shardflow/train/cell.h>
#include <shardflow/train/checkpoint.h>
#include <shardflow/train/model.h>
#include <shardflow/train/optimizer.h>
#include <shardflow/train/resume_point.h>

namespace sf {

/// One rank's whole training state: tensors and scalars, as the header above lists them.
struct TrainingState {
  /// Every parameter (trainable or not), the optimizer's state tensors and "global_step"
  /// (i32), by name; a superset of checkpoint_entries(), so load_into and load_param_into_net
  /// read it too.
  NamedTensors tensors;
  /// The scalars: "version", "global_step", "epoch", "step_in_epoch", "dataset", "rng",
  /// "optimizer", "rank", "ranks" (a JSON object; the format stores it as it is).
  nlohmann::json scalars = nlohmann::json::object();

  /// Where the resumed run continues: {scalars["epoch"], scalars["step_in_epoch"]}.
  ResumePoint resume_point() const;
};

/// The state where a callback's `ctx` stands (resume_point_of(ctx)): after the step at
/// on_step_end, after the epoch at on_epoch_end. Throws InvalidArgument for a RunContext that
/// Model::train did not make (no network, optimizer or dataset).
TrainingState capture_training_state(const RunContext& ctx);
/// The state of `model` and `train_set` at `at`, outside training: after train() returned,
/// at = {epochs trained, 0}.
TrainingState capture_training_state(Model& model, const dataset::Dataset& train_set, ResumePoint at);

/// Puts `state` back into `model`'s network and optimizer and sets the global seed; returns
/// the point to pass to Model::train, which positions `train_set` there. All or nothing: a
/// refused restore changes nothing, and each refusal is one line naming `source` and the item:
/// another optimizer kind or hyper-parameter (InvalidArgument), a dataset with another shuffle
/// seed, batch size, batches per epoch or shard (InvalidArgument), parameters the state lacks or
/// holds of another shape (as load_param_into_net reports them), tensors that name nothing of
/// this network or optimizer (InvalidArgument, listed), a missing or mis-shaped optimizer state
/// tensor (InvalidArgument, ShapeError), and malformed scalars (InvalidArgument). The state must
/// come from the same rank (a data-parallel rank's moving statistics and dataset shard are its
/// own); the resharding loader makes a rank's state for another configuration. In semi-auto,
/// auto and pipeline parallel the step is built first (Model::prepare), so that the state lands
/// in the parameter blocks it keeps; a pipeline rank restores the parameters its stages hold.
ResumePoint restore_training_state(Model& model, const dataset::Dataset& train_set, const TrainingState& state,
                                   const std::string& source = "the training state");

}  // namespace sf
