/// @file
/// train_elastic: Model::train, or a hand-written loop, that survives lost ranks
/// (docs/elastic.md). In a job started with
/// `sfrun --elastic MIN:MAX` (SF_ELASTIC), when a rank dies at any moment — forward, backward,
/// inside a collective, in the optimizer, during a checkpoint save — the survivors stop the step
/// in flight (train/loss_watch.h), agree among themselves on the new membership and on the step
/// to go back to (comm/membership.h), open a world of just them, build the training anew in it
/// with the caller's `build`, put back the agreed step's state from memory
/// (train/state_commits.h), mapped to the new rank count by the rule a restart from a checkpoint
/// follows (train/state_mapping.h), and go on. At most one step is lost, and the loss lines from
/// there on are those of a job restarted from that step's checkpoint on the survivors.
///
/// @code
///   sf::train_elastic(epochs, [&](uint32_t generation) {
///     sf::TrainingSetup s;  // everything for the world it is called in (get_rank, get_group_size)
///     auto net = std::make_shared<Network>();
///     auto opt = std::make_shared<sf::nn::SGD>(net->trainable_params(), 0.01f);
///     s.model = std::make_shared<sf::Model>(*net, loss, opt);
///     s.train_set = create_dataset(sf::comm::get_rank(), sf::comm::get_group_size());
///     s.callbacks = {std::make_shared<sf::LossMonitor>(10)};
///     s.keep = net;
///     return s;
///   });
/// @endcode
///
/// Each membership change prints one line on every rank (sfrun shows the first of each):
/// `shardflow elastic: generation 1: lost rank 2; detected at 17:20:01.123; members 0,1,3 (4 -> 3
/// ranks; this rank 3 -> 2); rolled back to step 17; recovered in 0.412 s`.
///
/// A world with fewer than MAX ranks also takes a replacement (sfrun --max-restarts; docs/elastic.md,
/// "Rejoin"): its rank 0 keeps a door (comm/transport.h JoinDoor) where the replacement, whose
/// comm::init joined there, asks; the ranks leave their step as after a loss, admit it in the
/// agreement, and the new rank 0 sends every other rank the agreed step's state
/// (train/state_transfer.h). The replacement's own train_elastic starts from that state.
///
/// Where it stops instead, one line each: fewer than MIN ranks left (after saving the agreed
/// step's state to ElasticOptions::stop_checkpoint_dir, on the survivors), a rank that was
/// frozen past the heartbeat bound (its peers went on without it), a transport that cannot
/// change its members (mpi: Open MPI 4.1 cannot shrink a communicator), a process holding
/// several ranks (--devices N). Without SF_ELASTIC it builds and trains once.
///
/// Modes: data parallel (and stand-alone), where every survivor holds every parameter whole, and
/// semi-auto and auto parallel, where a rank holds blocks and a lost rank's blocks are taken from
/// a data-parallel replica on a survivor (DP x TP; train/state_assembly.h puts the whole state
/// together on the new rank 0). `build` chooses the strategies for the world it is called in
/// (its rank count); a block that no survivor holds stops the job with a line naming it. Manual
/// (hybrid) parallel and pipelines are refused before the first step.
///
/// Threading: called by the rank's thread, once per process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <shardflow/data/dataset.h>
#include <shardflow/train/callback.h>
#include <shardflow/train/model.h>
#include <shardflow/train/resume_point.h>

namespace sf {

/// The ranks an elastic job may have: it goes on while at least `min` are left.
struct ElasticRange {
  int min = 1;  ///< below this the survivors checkpoint and stop
  int max = 1;  ///< the most ranks the job may have
};

/// The range in SF_ELASTIC ("MIN:MAX", set by sfrun --elastic), none when it is unset.
/// InvalidArgument, one line, for a malformed value.
std::optional<ElasticRange> elastic_range_from_env();

/// One world's training, built by the caller for the world it is called in.
struct TrainingSetup {
  std::shared_ptr<Model> model;        ///< trains; its network and optimizer are kept by `keep`
  dataset::Dataset train_set;          ///< this rank's shard for this world
  std::vector<CallbackPtr> callbacks;  ///< as for Model::train
  ResumePoint from;                    ///< where the first world starts (a resumed checkpoint)
  std::shared_ptr<void> keep;          ///< owns what `model` refers to (the network)
  /// A hand-written loop that trains this world instead of model->train (the model then only
  /// holds the loop's network and optimizer): called with the callbacks to call as Model::train
  /// would (train_elastic's own; LoopCheckpoint calls them) and the point to start from, whose
  /// state is already in place.
  std::function<void(const std::vector<CallbackPtr>& callbacks, ResumePoint from)> run;
};

/// How train_elastic behaves.
struct ElasticOptions {
  /// The job's range; none reads SF_ELASTIC (and no SF_ELASTIC means: not elastic).
  std::optional<ElasticRange> range;
  /// Where the survivors save the agreed step before stopping, when fewer than min are left.
  std::string stop_checkpoint_dir = "elastic_checkpoint";
  /// When set, each rank writes its steps and the membership changes it saw as a timeline,
  /// DIR/rank.R.timeline.json (R its launch rank), when it stops for any reason; `sfviz show`
  /// draws it, the changes as markers (train/step_timeline.h).
  std::string timeline_dir;
};

/// Makes ElasticOptions::timeline_dir `dir` if it does not exist; IoError, one line, if it cannot
/// be made. train_elastic calls it before the first step; a program may call it before it joins
/// its job, so that a bad directory stops it before any communication.
void prepare_timeline_dir(const std::string& dir);

/// Builds one world's training; `generation` counts the membership changes so far (0: the job's
/// first world, the only one that should resume a checkpoint: later ones are overwritten with
/// the agreed step's state).
using BuildTraining = std::function<TrainingSetup(uint32_t generation)>;

/// Trains `epochs` epochs (see the file comment); returns the setup of the world that finished,
/// for evaluation.
TrainingSetup train_elastic(int64_t epochs, const BuildTraining& build, ElasticOptions options = {});

}  // namespace sf
