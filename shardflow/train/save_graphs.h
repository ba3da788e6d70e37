/// @file
/// Saving the parallel IR of a semi-auto step (MindSpore's save_graphs / save_graphs_path):
/// each rank writes its global graph with the strategies and its local graph with the inserted
/// communication under `<path>/rank_<r>/` (file formats: parallel/ir_dump.h, docs/ir_dump.md).
///
/// @code
///   sf::Model model(net, loss, optimizer);
///   model.train(1, data, {std::make_shared<sf::SaveGraphs>(model, "saved_graph"), ...});
/// @endcode
///
/// SaveGraphs writes once, after the first step, when the step's program exists; later steps
/// with the same batch shape run the same graphs. Threading: callbacks run one at a time.
#pragma once

#include <string>
#include <vector>

#include <shardflow/train/callback.h>
#include <shardflow/train/model.h>
#include <shardflow/train/semi_auto_step.h>

namespace sf {

/// Writes this rank's dump of `sp` under `<path>/rank_<r>/`; returns the files written.
std::vector<std::string> save_graphs(const SemiAutoProgram& sp, const std::string& path);

/// A callback that saves each rank's parallel IR after the first step of Model::train.
class SaveGraphs : public Callback {
 public:
  /// `model` must outlive the callback and train in semi-auto or auto parallel mode (checked at
  /// the first step: InvalidArgument naming the mode otherwise).
  SaveGraphs(Model& model, std::string path = "saved_graph") : model_(model), path_(std::move(path)) {}
  /// Writes the dump after the first step; later steps do nothing.
  void on_step_end(const RunContext& ctx) override;
  /// The files written (empty before the first step).
  const std::vector<std::string>& files() const { return files_; }

 private:
  Model& model_;
  std::string path_;
  std::vector<std::string> files_;
};

}  // namespace sf
