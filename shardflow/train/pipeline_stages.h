// Which pipeline stage each op of a network runs on, recorded while a PipelineCell builds its
// graph: a cell with a pipeline_stage reports the ops it added (its children's own stages
// win, as they report first), and the order the staged cells ran in, which must not decrease.
//
// Threading: the record is per thread; one graph is built at a time on a thread.
#pragma once

#include <string>
#include <vector>

namespace sf::nn {

class StageRecord {
 public:
  // Records on the calling thread until destroyed.
  StageRecord();
  ~StageRecord();
  StageRecord(const StageRecord&) = delete;
  StageRecord& operator=(const StageRecord&) = delete;

  // Per node id of the graph being built: its stage, -1 where no staged cell made it.
  std::vector<int> stage_of_nodes(int graph_size) const;
  // The stages the staged cells ran with, in call order (for messages).
  const std::vector<std::pair<std::string, int>>& calls() const { return calls_; }

 private:
  friend void pipeline_stage_entered(const std::string& cell, int stage);
  friend void pipeline_stage_ops(int first, int end, int stage);
  std::vector<int> stage_;
  std::vector<std::pair<std::string, int>> calls_;
};

// Called by Cell::operator() for a cell with a stage; no-ops when nothing records. The first
// throws InvalidArgument naming both cells when a stage is lower than one that ran before it.
void pipeline_stage_entered(const std::string& cell, int stage);
void pipeline_stage_ops(int first, int end, int stage);

}  // namespace sf::nn
