/// @file
/// Training callbacks (MindSpore's LossMonitor, TimeMonitor, ModelCheckpoint) and the run
/// context Model::train hands them. Callbacks run between steps, one at a time, on a runtime
/// worker thread (not necessarily the thread that called train()) bound to the training rank,
/// so comm::get_rank() and the log sink (train/log_sink.h) see that rank. LossMonitor and
/// TimeMonitor print through the log sink unless given a stream: with several ranks in this
/// process, rank 0's lines on stdout by default (sf::set_log_ranks chooses).
#pragma once

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <shardflow/train/optimizer.h>

namespace sf::nn {
class Cell;
}  // namespace sf::nn
namespace sf::dataset {
class Dataset;
}  // namespace sf::dataset

namespace sf {

class Model;

/// Where training stands, as each callback sees it (MindSpore's RunContext).
struct RunContext {
  int64_t epoch = 0;                   ///< 1-based, as MindSpore prints it
  int64_t step_in_epoch = 0;           ///< 1-based: the steps of this epoch done
  int64_t steps_per_epoch = 0;         ///< batches per epoch
  int64_t global_step = 0;             ///< the optimizer's global_step()
  int64_t epochs = 0;                  ///< the epochs train() runs
  float loss = 0;                      ///< the loss of the step just finished
  nn::Optimizer* optimizer = nullptr;  ///< the model's optimizer
  /// The dataset epoch (from 0; data/dataset.h) this epoch walks: epoch - 1, unless train() was
  /// called again on a dataset whose epoch counter ran on. With step_in_epoch it is where the
  /// run stands (train/resume_point.h).
  int64_t dataset_epoch = 0;
  nn::Cell* network = nullptr;                      ///< the network trained (MindSpore's train_network)
  const dataset::Dataset* train_dataset = nullptr;  ///< the dataset walked (MindSpore's train_dataset)
  /// The model training: which parameters this rank holds (Model::held_parameters), its
  /// pipeline replica (a checkpoint stores each replica's moving statistics).
  Model* model = nullptr;
};

/// Called by Model::train around training, each epoch and each step; each hook does nothing
/// unless overridden.
class Callback {
 public:
  virtual ~Callback() = default;
  /// Before the first epoch.
  virtual void on_train_begin(const RunContext&) {}
  /// Before each epoch's first step.
  virtual void on_epoch_begin(const RunContext&) {}
  /// After each step, with its loss.
  virtual void on_step_end(const RunContext&) {}
  /// After each epoch's last step.
  virtual void on_epoch_end(const RunContext&) {}
  /// After the last epoch.
  virtual void on_train_end(const RunContext&) {}
};

/// How Model::train takes its callbacks.
using CallbackPtr = std::shared_ptr<Callback>;

/// Prints "epoch: 1 step: 20, loss is 2.241283893585205" every `per_print` steps of an epoch.
class LossMonitor : public Callback {
 public:
  /// Prints to the process's log sink (train/log_sink.h: with several ranks in this process,
  /// rank 0's lines on stdout by default) every `per_print` steps.
  explicit LossMonitor(int64_t per_print = 1);
  /// Prints to `out` every `per_print` steps, each line whole (write_line).
  LossMonitor(int64_t per_print, std::ostream& out);
  /// Prints the loss line when the step is one to print.
  void on_step_end(const RunContext& ctx) override;

 private:
  int64_t per_print_;
  std::ostream* out_;  // null: the log sink
};

/// Prints "Train epoch time: 1234.567 ms, per step time: 0.658 ms" after each epoch.
class TimeMonitor : public Callback {
 public:
  /// Prints to the process's log sink (train/log_sink.h).
  TimeMonitor() = default;
  /// Prints to `out`, each line whole (write_line).
  explicit TimeMonitor(std::ostream& out) : out_(&out) {}
  /// Starts the epoch's clock.
  void on_epoch_begin(const RunContext&) override { start_ = std::chrono::steady_clock::now(); }
  /// Prints the epoch's time and the time per step.
  void on_epoch_end(const RunContext& ctx) override;

 private:
  std::ostream* out_ = nullptr;  // null: the log sink
  std::chrono::steady_clock::time_point start_;
};

/// Saves the parameters and optimizer state as "<directory>/<prefix>-<epoch>_<step>.ckpt",
/// every `save_steps` global steps, or after each epoch when save_steps is 0.
class ModelCheckpoint : public Callback {
 public:
  /// Checkpoints named `prefix` in `directory`, every `save_steps` steps (0: every epoch).
  ModelCheckpoint(std::string prefix = "checkpoint", std::string directory = ".", int64_t save_steps = 0);
  /// Saves when save_steps divides the global step.
  void on_step_end(const RunContext& ctx) override;
  /// Saves when save_steps is 0.
  void on_epoch_end(const RunContext& ctx) override;
  /// Paths written so far, oldest first.
  const std::vector<std::string>& saved() const { return saved_; }

 private:
  void save(const RunContext& ctx);
  std::string prefix_, directory_;
  int64_t save_steps_;
  std::vector<std::string> saved_;
};

/// The loss as MindSpore prints it: the shortest decimal that round-trips the value as a double.
std::string format_loss(float loss);

}  // namespace sf
