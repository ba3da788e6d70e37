/// @file
/// The agreed step's whole state, put together after a membership change from what the members
/// hold (train/elastic_train.h). In data parallel every member holds every tensor whole; under
/// semi-auto and auto parallel a member holds the blocks its layout gives it, and a data-parallel
/// replica of each block lives on another rank (DP x TP). After a change the new rank 0 gathers
/// the blocks it lacks, one copy of each from the lowest member holding it, and puts every tensor
/// together whole; then it sends that state to every rank (train/state_transfer.h), and each cuts
/// from it the blocks its new layout gives it, as a restart from a checkpoint would read them.
///
/// Under pipeline parallel a member holds its stages' tensors only (DP x PP), and a data-parallel
/// replica of each stage lives on other ranks.
///
/// Where a tensor of a commit lies is written into its scalars by note_state_blocks:
/// scalars["blocks"][name] = {"global": [...], "offset": [...], "shape": [...]} for each tensor
/// held as a block; a tensor not listed is whole. scalars["held_elsewhere"] lists the network's
/// parameters the member does not hold (other pipeline stages'), so that rank 0 knows a parameter
/// whose every holder was lost. assemble_whole_state drops both entries.
///
/// The rounds (each member r > 0 with rank 0, under one membership tag, which a
/// Transport::interrupt leaves alone):
///   1. r sends what it holds: names, and the block of each tensor held as one;
///   2. rank 0 answers each r with the names it wants from it, or with the one-line error every
///      member then throws: a block that no member holds (the ranks lost were its only copies);
///   3. r sends those tensors (send_training_state).
///
/// Threading: the rank's thread, on the new world, before its training starts.
#pragma once

#include <chrono>
#include <optional>

#include <shardflow/comm/transport.h>
#include <shardflow/train/model.h>
#include <shardflow/train/training_state.h>

namespace sf {

/// Where `state` lies in the whole state, by `params`, the network's parameters: {"blocks": where
/// each tensor held as a block lies in the whole tensor, "held_elsewhere": the parameters it does
/// not hold} (the entries the file comment describes), each empty when the state is whole. A
/// world's layout does not change, so StateCommits works it out once.
nlohmann::json state_blocks(const TrainingState& state, const ParameterList& params);
/// Writes `layout` (state_blocks of a state of the same world) into `state`'s scalars; an empty
/// entry is removed.
void note_state_blocks(TrainingState& state, nlohmann::json layout);
/// Both: note_state_blocks(state, state_blocks(state, params)).
void note_state_blocks(TrainingState& state, const ParameterList& params);

/// Whether `state` holds a tensor as a block (note_state_blocks listed one).
bool holds_blocks(const TrainingState& state);
/// Whether `state` is the whole state: no tensor held as a block, no parameter held elsewhere.
bool holds_whole_state(const TrainingState& state);

/// Rounds 1-3 above on `world`, whose ranks 0 .. members-1 hold `own` (their state of the agreed
/// step `step`; the ranks from `members` on joined and hold nothing, and do not call it). Rank 0
/// returns the whole state, the others nothing. Throws Error, one line, on every member when a
/// block, or a parameter held elsewhere, is held by none (naming it), PeerLost when rank 0 (on the others)
/// or a member asked for blocks (on rank 0) is lost or silent past `timeout`; a member lost before
/// it said what it holds counts as holding nothing.
std::optional<TrainingState> assemble_whole_state(comm::Transport& world, int members, const TrainingState& own,
                                                  int64_t step, std::chrono::milliseconds timeout);

/// The state `model` restores from `whole` (a whole state, as assemble_whole_state makes): each
/// parameter and optimizer state tensor the model holds cut to its block (Model::prepare first,
/// so that the blocks are known), a parameter of the network that this rank does not hold (a
/// pipeline's other stages) and its optimizer state left out, anything else as it is
/// (restore_training_state judges it).
TrainingState cut_to_held_blocks(const TrainingState& whole, Model& model);

}  // namespace sf
