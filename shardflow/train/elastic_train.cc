#include <shardflow/train/elastic_train.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include <shardflow/comm/buffer_pool.h>
#include <shardflow/comm/membership.h>
#include <shardflow/comm/rank_context.h>
#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/context.h>
#include <shardflow/train/log_sink.h>
#include <shardflow/train/loop_checkpoint.h>
#include <shardflow/train/loss_watch.h>
#include <shardflow/train/state_assembly.h>
#include <shardflow/train/state_commits.h>
#include <shardflow/train/state_mapping.h>
#include <shardflow/train/state_transfer.h>
#include <shardflow/train/step_timeline.h>

namespace sf {

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string joined(const std::vector<int>& v) {
  std::string out;
  for (int r : v) out += fmt::format("{}{}", out.empty() ? "" : ",", r);
  return out;
}

// "17:20:01.123", local time: what a user compares with their own clock and sfrun's lines.
std::string clock_time(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::localtime_r(&s, &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  return fmt::format("{:02}:{:02}:{:02}.{:03}", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

// The checks before the first step: a world that can change and state whole on every rank.
void check_elastic_job(const ElasticRange& range) {
  const comm::RankContext* rank = comm::current_rank_or_null();
  SF_ENFORCE(rank && !comm::is_virtual_rank(), InvalidArgument,
             "train_elastic: an elastic job needs one rank per process (sfrun --elastic), not --devices N");
  SF_ENFORCE(rank->transport()->name() == "zmq", InvalidArgument,
             "train_elastic: the {} transport cannot change its members (Open MPI 4.1 cannot shrink a communicator); "
             "elastic jobs run over zmq (sfrun --elastic)",
             rank->transport()->name());
  SF_ENFORCE(range.min >= 1 && range.min <= rank->size() && rank->size() <= range.max, InvalidArgument,
             "train_elastic: SF_ELASTIC {}:{} does not hold the job's {} ranks", range.min, range.max, rank->size());
  const AutoParallelContext& ctx = get_auto_parallel_context();
  SF_ENFORCE(ctx.parallel_mode != ParallelMode::kHybridParallel, InvalidArgument,
             "train_elastic: parallel_mode {} runs the program's own collectives, which a membership change cannot "
             "redo on the survivors (data_parallel, semi_auto_parallel or auto_parallel)",
             parallel_mode_name(ctx.parallel_mode));
}

// Where the rank stands after a change: the agreed step's state mapped to this world, put into
// `setup`'s model. Returns the point to train from.
ResumePoint restore_into(TrainingSetup& setup, const TrainingState& whole, int64_t step) {
  const comm::RankContext& rank = comm::current_rank();
  const std::string source = fmt::format("the elastic state of step {}", step);
  // Under semi-auto and auto parallel the step is built first, which cuts the parameters to the
  // blocks of this world's layout; this rank restores those blocks of the whole state.
  setup.model->prepare(setup.train_set);
  TrainingState state = cut_to_held_blocks(whole, *setup.model);
  const int saved_ranks = state.scalars.value("ranks", 1);  // the world that captured it
  state.scalars = map_state_scalars(state.scalars, setup.train_set, rank.rank(), rank.size(), saved_ranks, source);
  return restore_training_state(*setup.model, setup.train_set, state, source);
}

// The first state of a world that starts from its build (or a resumed checkpoint): after the
// step is built, so that a semi-auto parameter is its block, noted as one.
TrainingState start_state(TrainingSetup& setup, ResumePoint from) {
  setup.model->prepare(setup.train_set);
  TrainingState state = capture_training_state(*setup.model, setup.train_set, from);
  note_state_blocks(state, setup.model->network().get_parameters());
  return state;
}

// One world's training: Model::train, or the caller's own loop.
void train_once(TrainingSetup& setup, int64_t epochs, const std::vector<CallbackPtr>& callbacks, ResumePoint from) {
  if (setup.run) {
    setup.run(callbacks, from);
  } else {
    setup.model->train(epochs, setup.train_set, callbacks, from);
  }
}

// Keeps rank 0's door open while the run has at least two steps left: a rank that leaves its
// step for a join may be one step behind its peers, which then still wait for it (a peer one
// step ahead of a rank 0 that stops in its last step would finish without it).
class JoinWindow : public Callback {
 public:
  JoinWindow(LossWatch& watch, int64_t epochs, int64_t steps_per_epoch)
      : watch_(watch), epochs_(epochs), steps_per_epoch_(steps_per_epoch) {}
  void on_step_end(const RunContext& ctx) override {
    const int64_t left = (epochs_ - ctx.epoch) * steps_per_epoch_ + (steps_per_epoch_ - ctx.step_in_epoch);
    watch_.set_joins_open(left >= 2);
  }

 private:
  LossWatch& watch_;
  int64_t epochs_, steps_per_epoch_;
};

// "lost rank 2", "rank 2 joined", "lost rank 2, rank 5 joined": what a change did, with sfrun's
// rank numbers.
std::string change_words(const std::vector<int>& lost, const std::vector<int>& joined) {
  std::string out;
  if (!lost.empty()) out = fmt::format("lost rank{} {}", lost.size() == 1 ? "" : "s", brief_list(lost));
  if (!joined.empty())
    out += fmt::format("{}rank{} {} joined", out.empty() ? "" : ", ", joined.size() == 1 ? "" : "s",
                       brief_list(joined));
  return out;
}

// Writes the rank's timeline however train_elastic ends (a failure to write is reported, not
// thrown: the run's own outcome matters more).
struct TimelineOnExit {
  std::shared_ptr<StepTimeline> timeline;
  std::string path;
  ~TimelineOnExit() {
    if (!timeline) return;
    try {
      timeline->write(path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shardflow elastic: the timeline was not written: %s\n", e.what());
    }
  }
};

}  // namespace

std::optional<ElasticRange> elastic_range_from_env() {
  const char* v = std::getenv("SF_ELASTIC");
  if (!v || !*v) return std::nullopt;
  ElasticRange r;
  char colon = 0;
  int used = 0;
  const std::string text(v);
  const bool parsed = std::sscanf(v, "%d%c%d%n", &r.min, &colon, &r.max, &used) == 3 && colon == ':' &&
                      used == static_cast<int>(text.size());
  SF_ENFORCE(parsed && r.min >= 1 && r.min <= r.max, InvalidArgument,
             "SF_ELASTIC='{}' is not MIN:MAX with 1 <= MIN <= MAX", brief_text(text, 40));
  return r;
}

void prepare_timeline_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  SF_ENFORCE(!ec && std::filesystem::is_directory(dir), IoError, "the timeline directory '{}' cannot be made: {}",
             brief_text(dir, 200), ec ? ec.message() : "a file of that name is in the way");
}

TrainingSetup train_elastic(int64_t epochs, const BuildTraining& build, ElasticOptions options) {
  const std::optional<ElasticRange> range = options.range ? options.range : elastic_range_from_env();
  if (!range) {
    TrainingSetup setup = build(0);
    train_once(setup, epochs, setup.callbacks, setup.from);
    return setup;
  }
  check_elastic_job(*range);
  std::optional<TrainingState> restore;  // the agreed step's state, after a change
  int64_t restore_step = 0;
  // The launcher's rank of each rank of the current world: the lines name ranks as sfrun does.
  std::vector<int> launch(static_cast<size_t>(comm::current_rank().size()));
  for (size_t r = 0; r < launch.size(); ++r) launch[r] = static_cast<int>(r);
  std::string change_line;  // printed once the new world is ready to train
  SteadyClock::time_point detected;
  uint32_t first_generation = 0;
  if (const comm::Admission* admitted = comm::current_rank().transport()->admission()) {
    // A replacement that joined a running job: the members' rank 0 sends the agreed state.
    ReceivedState got = recv_training_state(*comm::current_rank().transport(), 0, std::chrono::seconds(60));
    comm::current_rank().transport()->send(0, training_state_received_tag(), Tensor::full({1}, 1.0f));
    const auto linked = admitted->linked_at;
    first_generation = admitted->generation;
    launch = admitted->labels;
    restore = std::move(got.state);
    restore_step = got.step;
    detected = linked;
    const int me = comm::current_rank().rank();
    // The members' line, seen from the joiner (one shape for sfrun and for readers).
    change_line = fmt::format("shardflow elastic: generation {}: rank {} joined; detected at {}; members {} ({} -> {} "
                              "ranks; this rank joined -> {}); rolled back to step {}; {} bytes of state from rank 0 "
                              "within {:.3f} s of the link, streamed in {:.4f} s",
                              first_generation, launch[static_cast<size_t>(me)],
                              clock_time(std::chrono::system_clock::now()), joined(launch), launch.size() - 1,
                              launch.size(), me, restore_step, got.bytes,
                              std::chrono::duration<double>(SteadyClock::now() - linked).count(),
                              std::chrono::duration<double>(got.streamed).count());
  }
  // sfrun keeps the job going after a loss only once a rank has said this (tools/sfrun/elastic_lines.h).
  log_line(fmt::format("shardflow elastic: rank {} of {} trains elastic ({}:{})",
                       launch[static_cast<size_t>(comm::current_rank().rank())], comm::current_rank().size(),
                       range->min, range->max));
  TimelineOnExit timeline;
  if (!options.timeline_dir.empty()) {
    prepare_timeline_dir(options.timeline_dir);  // now, not found unwritable when the rank stops
    timeline.timeline = std::make_shared<StepTimeline>(SteadyClock::now());
    timeline.path = fmt::format("{}/rank.{}.timeline.json", options.timeline_dir,
                                launch[static_cast<size_t>(comm::current_rank().rank())]);
  }
  // Rank 0's door, kept from world to world while this rank stays rank 0 and the job may grow,
  // with the requests it holds that no change has admitted yet.
  std::unique_ptr<comm::JoinDoor> door;
  std::vector<comm::JoinRequest> waiting;
  for (uint32_t generation = first_generation;; ++generation) {
    TrainingSetup setup = build(generation);
    ResumePoint from = setup.from;
    if (restore) from = restore_into(setup, *restore, restore_step);
    if (!change_line.empty())
      log_line(fmt::format("{}; recovered in {:.3f} s", change_line,
                           std::chrono::duration<double>(SteadyClock::now() - detected).count()));
    if (from.epoch >= epochs) return setup;  // the agreed step was the last one
    // The state this world starts from is its first commit: a loss before its first step goes
    // back to it.
    auto commits = restore ? std::make_shared<StateCommits>(restore_step, *restore)
                           : std::make_shared<StateCommits>(setup.model->optimizer().global_step(),
                                                            start_state(setup, from));
    const std::shared_ptr<comm::Transport> world = comm::current_rank().transport();
    // A world with room for more ranks takes replacements at rank 0's door (sfrun --max-restarts).
    const bool may_grow = world->size() < range->max;
    if (may_grow && world->rank() == 0) {
      if (!door) door = world->open_door();
      if (door) {
        // A joiner readies its buffers for the state before it asks to join; this rank's own state
        // is its size under data parallel (with blocks or stages the whole one is larger: a part
        // is ready).
        door->expect(training_state_message_bytes(*commits->at(commits->newest_step())));
        log_line(fmt::format("shardflow elastic: join generation {} at {}", generation, door->address()));
      }
    } else {
      door.reset();  // the requests it holds are refused
      waiting.clear();
    }
    auto watch = std::make_unique<LossWatch>(world, door.get(), may_grow, waiting);
    std::vector<CallbackPtr> callbacks = setup.callbacks;
    callbacks.push_back(commits);
    if (may_grow)
      callbacks.push_back(std::make_shared<JoinWindow>(*watch, epochs, setup.train_set.get_dataset_size()));
    if (timeline.timeline) callbacks.push_back(timeline.timeline);
    try {
      train_once(setup, epochs, callbacks, from);
      watch->stop();
      // Peers that closed their endpoints after the last step finished too, and left: only a
      // lost one can have left the others inside the last step. Their close interrupted this
      // world, in which what follows (an evaluation's collectives, whose messages they sent
      // before leaving) still runs.
      if (!watch->fired() || (watch->frozen_for().count() == 0 && world->lost_peers().empty())) {
        world->clear_interrupt();
        return setup;
      }
    } catch (const Error&) {
      watch->stop();
      if (!watch->fired()) throw;  // the run's own error, not a lost rank
    }
    // A training that finished while a peer was lost still goes through the agreement: the
    // others may be inside the last step, and wait for this rank.
    const int me = world->rank();
    SF_ENFORCE(watch->frozen_for().count() == 0, Error,
               "elastic: rank {} was frozen for {:.1f} s, past the heartbeat bound of {:.1f} s; its peers have gone "
               "on without it",
               me, watch->frozen_for().count() / 1000.0, world->loss_bound().count() / 1000.0);
    // The old world's model, its actors and the callbacks go before the agreement: what they do
    // on the way out (an asynchronous checkpoint's commit is a collective) must fail on the old,
    // interrupted world, not run on the new one.
    callbacks.clear();
    setup = TrainingSetup{};
    comm::MembershipInput in;
    in.generation = generation;
    in.committed_step = commits->newest_step();
    in.lost = watch->lost();
    in.door = door.get();
    in.joining = watch->requests();
    in.max_size = range->max;
    in.labels = launch;
    const comm::MembershipChange change = comm::agree_membership(*world, in);
    waiting = change.waiting;
    std::optional<TrainingState> state = commits->at(change.step);
    SF_ENFORCE(state, Error, "elastic: rank {} holds no state of the agreed step {} (its newest is {})", me,
               change.step, commits->newest_step());
    const int old_ranks = world->size();
    comm::replace_world(change.transport);
    // Every rank goes on from the agreed step's whole state, as a restart from its checkpoint
    // would: the new rank 0 puts it together from the members' blocks and stages
    // (train/state_assembly.h; under data parallel it holds it all) and sends it to every rank. A
    // joiner has none, and rank-local state (BatchNorm's moving statistics) differs between
    // data-parallel ranks.
    try {
      std::optional<TrainingState> whole = assemble_whole_state(
          *change.transport, static_cast<int>(change.members.size()), *state, change.step, in.timeout);
      if (change.rank == 0) {
        state = std::move(whole);
        // Joiners first, and the members once each joiner holds it: the joiners' link is not shared
        // with the members' transfers then, nor their cores with the members' rebuild, and the
        // members, who wait for their rebuild anyway, lose a millisecond.
        const int kept = static_cast<int>(change.members.size());
        for (int r = kept; r < change.transport->size(); ++r)
          send_training_state(*change.transport, r, *state, change.step);
        for (int r = kept; r < change.transport->size(); ++r) {
          try {
            comm::BufferPool::global().release(change.transport->recv(r, training_state_received_tag(), in.timeout));
          } catch (const PeerLost&) {
            // A joiner lost on its way in: the new world's watcher sees it; the members still need theirs.
          }
        }
        for (int r = 1; r < kept; ++r) send_training_state(*change.transport, r, *state, change.step);
      } else {
        state = recv_training_state(*change.transport, 0, in.timeout).state;
      }
    } catch (const PeerLost& e) {
      // A rank lost as the world began. A rank whose own state of the step is whole (data
      // parallel) goes on from it, equal in the parameters; the new world's watcher sees the loss
      // at once, and the next agreement sends a state again. Blocks or stages of the old layout do
      // not make this world's.
      SF_ENFORCE(holds_whole_state(*state), Error,
                 "elastic: rank {} was lost while the state of step {} was put together from the members' parts; "
                 "rank {} cannot go on from its own part",
                 e.rank(), change.step, change.rank);
    }
    std::vector<int> lost_launch, members_launch;
    for (int r : change.lost) lost_launch.push_back(launch[r]);
    for (int r : change.members) members_launch.push_back(launch[r]);
    for (int label : change.joined) members_launch.push_back(label);
    launch = members_launch;
    const int members = static_cast<int>(members_launch.size());
    const std::string what = change_words(lost_launch, change.joined);
    const std::string head = fmt::format("shardflow elastic: generation {}: {}; detected at {}", generation + 1, what,
                                         clock_time(watch->detected_at()));
    if (timeline.timeline)
      timeline.timeline->mark(watch->detected_steady(),
                              fmt::format("generation {}: {}; {} -> {} ranks; rolled back to step {}", generation + 1,
                                          what, old_ranks, members, change.step));
    if (members < range->min) {
      log_line(fmt::format("{}; members {} ({} -> {} ranks, below the minimum of {}): saving step {} to {} and "
                           "stopping",
                           head, joined(members_launch), old_ranks, members, range->min, change.step,
                           options.stop_checkpoint_dir));
      TrainingSetup last = build(generation + 1);
      const ResumePoint at = restore_into(last, std::move(*state), change.step);
      // Saved as a loop saves after a step (save_every 1): the restored point is that step's end.
      LoopCheckpoint save(*last.model, last.train_set, {options.stop_checkpoint_dir, 1, 0});
      save.begin("");
      save.step_end(at.epoch, at.step);
      save.end();
      SF_THROW(Error, "elastic: {} rank{} left, below the minimum of {}: stopped after saving step {} to '{}'",
               members, members == 1 ? "" : "s", range->min, change.step, options.stop_checkpoint_dir);
    }
    restore = std::move(state);
    restore_step = change.step;
    detected = watch->detected_steady();
    change_line = fmt::format("{}; members {} ({} -> {} ranks; this rank {} -> {}); rolled back to step {}", head,
                              joined(members_launch), old_ranks, members, me, change.rank, change.step);
  }
}

}  // namespace sf
