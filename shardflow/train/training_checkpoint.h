/// @file
/// A run's whole training state (train/training_state.h) in a distributed checkpoint directory
/// (docs/checkpoint_format.md, version 2), and back: CheckpointDir, a callback that saves every
/// K steps and at the end of training, and resume_from, which loads a committed step into a new
/// Model, resharded to this rank's layout, and returns the point to pass to Model::train.
///
/// @code
///   // every rank of the first job:
///   model.train(3, data, {std::make_shared<sf::CheckpointDir>("run", 30, 3)});
///   // every rank of a new job, the network, Model and dataset built as before:
///   model.train(3, data, callbacks, sf::resume_from(model, data, "run"));  // or "run/step_30"
/// @endcode
///
/// What is stored where: every parameter (BatchNorm's moving statistics included), the
/// optimizer's state tensors and "global_step" are tensors, each with its parameter's block
/// layout (ckpt::parameter_block); the TrainingState scalars are rank 0's "state" and each
/// rank's "state" in the manifest. With several ranks, a parameter the optimizer does not step
/// (moving statistics) is each rank's own: it is also stored as "rank_local.<name>", of shape
/// (ranks, ...), row r being rank r's; the plain "<name>" holds rank 0's.
///
/// Every mode saves and resumes. Semi-auto and auto parallel store each parameter block under
/// the layout its ops' strategies give it; resume_from builds the step first (Model::prepare),
/// so that each rank reads only its blocks. In pipeline parallel each rank saves and reads the
/// parameters its stages hold (Model::held_parameters); the moving statistics of each
/// data-parallel replica of a stage are that replica's row of "rank_local.<name>".
///
/// Resuming on the configuration that saved (the same rank count, mode and dataset) continues
/// bitwise equal to the uninterrupted run. On another rank count or mode (data parallel, semi-auto
/// and auto parallel, pipeline stages and 1 device load each other's checkpoints: tensors are
/// stored by name under their layouts), the dataset position is mapped by
/// train/state_mapping.h: the step count with the same global batch (batch size x shards), by
/// rows with another; a shuffled dataset only when its shards are the same (a shuffle is per
/// shard; semi-auto, auto and pipeline parallel read the whole set on every rank), refused
/// otherwise, naming the item. Each rank takes rank 0's moving statistics.
///
/// Threading: every rank of the job saves (a collective) and resumes, on its own thread.
#pragma once

#include <shardflow/train/checkpoint_dir_callback.h>
#include <shardflow/train/resume_from.h>
