/// @file
/// map_state_scalars: a training state's scalars (train/training_state.h) captured on one
/// configuration made fit for another — another rank count, mode or global batch — the rule that
/// both resume_from (a checkpoint) and train_elastic (a membership change, from memory) follow,
/// so that a run that changes its ranks and a run restarted on the new ranks read the same
/// batches.
///
/// The dataset position maps by rows. A state saved after `step` steps of an epoch, with a global
/// batch of G rows (batch size x shards), has read that epoch's first step x G rows (shards are
/// interleaved, data/sharding.h). With a global batch of G' the run goes on at step
/// ceil(step x G / G') of the same epoch — the first global batch that reads no row already read;
/// fewer than G' rows of the epoch are skipped, none read twice — or at the next epoch when the
/// epoch has no such step. With G' = G that is the same step, and the batches per epoch must then
/// be the same. A shuffled dataset maps only to the same shards: a shuffle is per shard, so
/// another shard count reads other rows.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <shardflow/data/dataset.h>

namespace sf {

/// `saved`, a state's scalars captured on `saved_ranks` ranks, made those of rank `rank` of
/// `ranks` reading `data` (dataset fields, position, rank), by the rule above. InvalidArgument,
/// one line naming `source`, when the position does not map.
nlohmann::json map_state_scalars(nlohmann::json saved, const dataset::Dataset& data, int rank, int ranks,
                                 int saved_ranks, const std::string& source);

}  // namespace sf
