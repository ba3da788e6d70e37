#include "examples/example_main.h"

#include <exception>
#include <iostream>
#include <optional>

#include <shardflow/comm/bootstrap/init.h>
#include <shardflow/core/cli_checks.h>
#include <shardflow/core/error.h>
#include <shardflow/train/elastic_train.h>
#include <shardflow/train/log_sink.h>
#include <shardflow/train/rank_log.h>
#include <shardflow/train/training_checkpoint.h>

namespace sf::examples {

Example::Example(std::string description, unsigned common) : app_(std::move(description)), common_flags_(common) {
  // The last of a repeated option wins: scripts/default_job.sh passes its arguments on after
  // its own defaults, which they override.
  app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

std::string Example::logs_where() const { return several_ ? job_dir_ + "/rank.*/stdout" : "stdout"; }

int Example::main(int argc, char** argv) {
  // Registered here, after the example changed their defaults, so that --help shows those.
  if (common_flags_ & kDataDir)
    app_.add_option("--data-dir", common_.data_dir, "directory with the Fashion-MNIST IDX files");
  if (common_flags_ & kEpochs) app_.add_option("--epochs", common_.epochs, "epochs")->check(cli::kPositive);
  if (common_flags_ & kSteps)
    app_.add_option("--steps", common_.steps, "training steps per epoch (0: every batch)")->check(cli::kNonNegative);
  if (common_flags_ & kPrintEvery)
    app_.add_option("--print-every", common_.print_every, "steps between loss lines")->check(cli::kPositive);
  if (common_flags_ & kLogDir) {
    app_.add_option("--log-dir", common_.log_dir, "per-rank logs when this process holds several devices");
    app_.add_option("--log-ranks", common_.log_ranks, "which devices of this process print: rank0, all or files");
  }
  if (common_flags_ & kCheckpoint) {
    CLI::Option* dir =
        app_.add_option("--checkpoint-dir", common_.checkpoint_dir, "save the training state under DIR/step_<n>");
    app_.add_option("--save-every", common_.save_every, "steps between checkpoints (0: at the end only)")
        ->check(cli::kNonNegative)
        ->needs(dir);
    app_.add_option("--keep", common_.keep, "keep the newest K checkpoints (0: all)")
        ->check(cli::kNonNegative)
        ->needs(dir);
    app_.add_option("--resume", common_.resume, "continue from checkpoint DIR (its latest step) or DIR/step_<n>");
  }
  try {
    comm::JobSpec job;
    LogRanks log_ranks = LogRanks::kRank0;
    try {
      job = comm::resolve_job(comm::consume_comm_args(argc, argv), comm::process_env());
      app_.parse(argc, argv);
      log_ranks = parse_log_ranks(common_.log_ranks);
    } catch (const CLI::CallForHelp& e) {
      return app_.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app_.exit(e);
    } catch (const CLI::ParseError& e) {
      std::cerr << "error: " << e.what() << std::endl;
      return 2;
    } catch (const InvalidArgument& e) {  // a bad --devices, launcher variable or --log-ranks
      std::cerr << "error: " << e.what() << std::endl;
      return 2;
    }
    if (prepare(job) == Next::kDone) return 0;
    comm::init(job);
    several_ = comm::job().local_ranks > 1;
    job_dir_ = several_ ? new_job_dir(common_.log_dir) : "";
    set_log_ranks(log_ranks, job_dir_);
    run();
    comm::release();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}

ResumePoint Example::checkpointing(Model& model, const dataset::Dataset& train_set,
                                   std::vector<CallbackPtr>& callbacks) const {
  return checkpointing(model, train_set, callbacks, common_.resume);
}

ResumePoint Example::checkpointing(Model& model, const dataset::Dataset& train_set, std::vector<CallbackPtr>& callbacks,
                                   const std::string& resume) const {
  if (!common_.checkpoint_dir.empty())
    callbacks.push_back(std::make_shared<CheckpointDir>(common_.checkpoint_dir, common_.save_every, common_.keep));
  return resume.empty() ? ResumePoint{} : resume_from(model, train_set, resume);
}

dataset::Dataset take_steps(const dataset::Dataset& rows, int64_t steps, int64_t batch) {
  return steps > 0 ? rows.take(steps * batch) : rows;
}

void check_elastic_worlds(const std::function<void(int ranks)>& check) {
  const std::optional<ElasticRange> range = elastic_range_from_env();
  if (!range) return;
  for (int n = range->min; n <= range->max; ++n) {
    try {
      check(n);
    } catch (const Error& e) {
      SF_THROW(InvalidArgument, "{} (in a world of {} ranks, which sfrun --elastic {}:{} may come to)", e.what(), n,
               range->min, range->max);
    }
  }
}

}  // namespace sf::examples
