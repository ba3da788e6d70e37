// The planned timeline: each stage's actions paired with the simulator's start and finish times.
#include <shardflow/pipeline/timeline.h>

#include <shardflow/core/error.h>

namespace sf::pipeline {

bool has_collectives(const Timeline& t) {
  for (const auto& stage : t.collectives)
    if (!stage.empty()) return true;
  return false;
}

Timeline planned_timeline(const Schedule& schedule, const SimulationResult& result) {
  const std::string name = schedule.name.empty() ? "(parsed)" : schedule.name;
  SF_ENFORCE(
      static_cast<int>(schedule.actions.size()) == schedule.stages && result.stages.size() == schedule.actions.size(),
      InvalidArgument, "planned timeline of '{}': {} stage lists, {} simulated stages, {} stages", name,
      schedule.actions.size(), result.stages.size(), schedule.stages);
  Timeline t;
  t.schedule = schedule.name;
  t.source = "planned";
  t.unit = "unit";
  t.stages = schedule.stages;
  t.micro_batches = schedule.micro_batches;
  t.chunks = schedule.chunks;
  t.spans.resize(schedule.stages);
  for (int s = 0; s < schedule.stages; ++s) {
    const auto& list = schedule.actions[s];
    const StageTimeline& line = result.stages[s];
    SF_ENFORCE(line.start.size() == list.size() && line.finish.size() == list.size(), InvalidArgument,
               "planned timeline of '{}': stage {} has {} actions but {} simulated times", name, s, list.size(),
               line.start.size());
    t.spans[s].reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) t.spans[s].push_back({list[i], line.start[i], line.finish[i]});
  }
  return t;
}

}  // namespace sf::pipeline
