#include <shardflow/train/pipeline_stages.h>

#include <shardflow/core/error.h>

namespace sf::nn {
namespace {
thread_local StageRecord* active_stages = nullptr;
}

StageRecord::StageRecord() {
  SF_ENFORCE(active_stages == nullptr, InvalidArgument, "pipeline: a stage record is already active on this thread");
  active_stages = this;
}

StageRecord::~StageRecord() { active_stages = nullptr; }

std::vector<int> StageRecord::stage_of_nodes(int graph_size) const {
  std::vector<int> out(static_cast<size_t>(graph_size), -1);
  for (size_t i = 0; i < stage_.size() && i < out.size(); ++i) out[i] = stage_[i];
  return out;
}

void pipeline_stage_entered(const std::string& cell, int stage) {
  if (!active_stages) return;
  for (const auto& [name, s] : active_stages->calls_)
    SF_ENFORCE(s <= stage, InvalidArgument,
               "pipeline: cell '{}' has pipeline_stage {} but runs after cell '{}' with pipeline_stage {}; stages "
               "must not decrease in execution order",
               cell, stage, name, s);
  active_stages->calls_.emplace_back(cell, stage);
}

void pipeline_stage_ops(int first, int end, int stage) {
  if (!active_stages) return;
  if (static_cast<int>(active_stages->stage_.size()) < end) active_stages->stage_.resize(static_cast<size_t>(end), -1);
  for (int id = first; id < end; ++id)
    if (active_stages->stage_[id] < 0) active_stages->stage_[id] = stage;
}

}  // namespace sf::nn
