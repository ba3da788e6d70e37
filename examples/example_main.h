// The main() every example shares, so that each states only what is its own: its options, its
// network and strategies, its per-rank body. Example::main
//   1. takes the comm layer's arguments out of argv (--devices N, --backend, --comm-timeout,
//      --comm-debug) and resolves the job from them and the environment (sfrun, mpirun, Slurm),
//   2. parses the rest: the common options the example asked for and its own,
//   3. runs the example's `prepare` with the job's size known but not joined: inputs are read
//      and strategies derived or refused here, so that a bad input stops a rank at once even
//      when its peers never come,
//   4. joins the job (sf::comm::init), makes the per-rank log directory, runs `run`, releases.
// Any error ends the program with one line, "error: ...": exit 2 for a bad command line (as
// CLI11 words it), 1 for anything else. A repeated option takes its last value, so a wrapper
// script's defaults are overridden by the arguments it passes on.
//
//   int main(int argc, char** argv) {
//     sf::examples::Example ex("what it trains", sf::examples::kDataDir | sf::examples::kEpochs);
//     ex.cli().add_option("--batch", batch);
//     ex.prepare = [&](const sf::comm::JobSpec& job) { ...; return sf::examples::Next::kJoin; };
//     ex.run = [&] { sf::comm::run_ranks([&] { sf::RankLog log(ex.job_dir()); ... }); };
//     return ex.main(argc, argv);
//   }
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include <shardflow/comm/bootstrap/job_spec.h>
#include <shardflow/data/dataset.h>
#include <shardflow/train/callback.h>
#include <shardflow/train/model.h>
#include <shardflow/train/resume_point.h>

namespace sf::examples {

inline const std::string kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// The options several examples share; each example picks those it takes (Common flags) and may
// change their defaults before main().
struct CommonOptions {
  std::string data_dir = kFashionMnistDir;  // --data-dir: the Fashion-MNIST IDX files
  std::string log_dir = "log_output";       // --log-dir: per-rank logs of a process holding several ranks
  int64_t epochs = 1;                       // --epochs
  int64_t steps = 0;                        // --steps: training steps per epoch, 0 for every batch
  int64_t print_every = 10;                 // --print-every: steps between loss lines
  // --log-ranks rank0|all|files (with --log-dir): which virtual ranks' lines of the log sink
  // (train/log_sink.h: LossMonitor and TimeMonitor without a stream, sf::log_line) reach
  // stdout; set with the job directory before the ranks start.
  std::string log_ranks = "rank0";
  // Checkpointing a Model::train run (train/training_checkpoint.h; docs/checkpoint_format.md,
  // "Resuming"): --checkpoint-dir DIR saves the whole training state every --save-every steps
  // (0: at the end only) keeping the newest --keep steps (0: all); --resume DIR (its latest
  // step) or DIR/step_<n> continues a run from a checkpoint.
  std::string checkpoint_dir;
  int64_t save_every = 0;
  int keep = 0;
  std::string resume;
};

enum Common : unsigned {
  kDataDir = 1u << 0,
  kLogDir = 1u << 1,  // --log-dir and --log-ranks
  kEpochs = 1u << 2,
  kSteps = 1u << 3,
  kPrintEvery = 1u << 4,
  // --checkpoint-dir, --save-every, --keep, --resume (Example::checkpointing, or
  // LoopCheckpoint in a hand-written loop).
  kCheckpoint = 1u << 5,
};

// What prepare decided: join the job and train, or stop without one (a dry run's plan).
enum class Next { kJoin, kDone };

class Example {
 public:
  Example(std::string description, unsigned common);

  CLI::App& cli() { return app_; }
  CommonOptions& common() { return common_; }
  const CommonOptions& common() const { return common_; }

  // Before any communication, with the command line parsed; job.size is the number of ranks.
  std::function<Next(const comm::JobSpec& job)> prepare = [](const comm::JobSpec&) { return Next::kJoin; };
  // After sf::comm::init: the example's ranks (comm::run_ranks) and whatever follows them.
  std::function<void()> run;

  // Parses, prepares, joins, runs; returns the exit code (see the header comment).
  int main(int argc, char** argv);

  // Valid in run(): whether this process holds several ranks, and then the directory their
  // RankLogs write under (log_dir/<job>/), "" when it holds one (its rank logs to stdout).
  bool several() const { return several_; }
  const std::string& job_dir() const { return job_dir_; }
  // "<job_dir>/rank.*/stdout" or "stdout": where the ranks' loss lines are, for a summary line.
  std::string logs_where() const;
  // With kCheckpoint, on each rank before Model::train: adds a CheckpointDir to `callbacks`
  // when --checkpoint-dir is given, restores --resume's checkpoint into `model` when given, and
  // returns the point to train from ({0, 0} without --resume).
  ResumePoint checkpointing(Model& model, const dataset::Dataset& train_set,
                            std::vector<CallbackPtr>& callbacks) const;
  // The same, resuming `resume` instead of --resume ("" resumes nothing).
  ResumePoint checkpointing(Model& model, const dataset::Dataset& train_set, std::vector<CallbackPtr>& callbacks,
                            const std::string& resume) const;

 private:
  CLI::App app_;
  unsigned common_flags_;
  CommonOptions common_;
  bool several_ = false;
  std::string job_dir_;
};

// --steps on a dataset not yet batched: its first steps x batch rows (steps 0: all of them).
dataset::Dataset take_steps(const dataset::Dataset& rows, int64_t steps, int64_t batch);

// Under `sfrun --elastic MIN:MAX` (SF_ELASTIC), in prepare: check(n) for every rank count n the
// job may come to, each failure rethrown as InvalidArgument naming that world, so that a
// configuration the survivors of a change could not train is refused before the job starts.
// Nothing without SF_ELASTIC.
void check_elastic_worlds(const std::function<void(int ranks)>& check);

}  // namespace sf::examples
