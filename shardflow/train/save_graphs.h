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

#include <shardflow/pipeline/stage_program.h>
#include <shardflow/pipeline/stage_split.h>
#include <shardflow/train/callback.h>
#include <shardflow/train/model.h>
#include <shardflow/train/semi_auto_step.h>

namespace sf {

/// Writes this rank's dump of `sp` under `<path>/rank_<r>/`; returns the files written.
std::vector<std::string> save_graphs(const SemiAutoProgram& sp, const std::string& path);

/// A pipeline rank's dump under `<path>/rank_<r>/`: step_parallel_begin.ir (.dot) with each of
/// its virtual stages' graphs and strategies — one pair of files per chunk when the rank runs
/// several (step_parallel_begin_chunk0.ir, step_parallel_begin_chunk1.ir, ...) — and execute.ir
/// (.dot), its program: every chunk's forward and backward with the collectives inside the stage
/// and the Send/Receive between stages. Returns the files written.
std::vector<std::string> save_graphs(const pipeline::StageProgram& program,
                                     const std::vector<pipeline::StageGraph>& stages, int rank,
                                     const std::string& path);

/// A callback that saves each rank's parallel IR after the first step of Model::train.
class SaveGraphs : public Callback {
 public:
  /// `model` must outlive the callback and train in semi-auto or auto parallel mode, pipelines
  /// included (checked at the first step: InvalidArgument naming the mode otherwise).
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
