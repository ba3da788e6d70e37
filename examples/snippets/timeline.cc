// docs/pipeline_viz.md's measured timeline: a Timeline filled from the stage actors' clocks
// and written for sfviz. Here one made-up span (stage 0's first action, 0 to 100 us); fails
// unless the file reads back with it.
#include <iostream>

#include <shardflow/pipeline/schedule.h>
#include <shardflow/pipeline/timeline_json.h>

int main() try {
  const sf::pipeline::Schedule schedule = sf::pipeline::make_schedule(sf::pipeline::ScheduleKind::kOneFOneB, 2, 4);
  const int stage = 0;
  const sf::pipeline::Action action = schedule.actions[stage].front();
  const double start_us = 0, finish_us = 100;
  // [timeline]
  sf::pipeline::Timeline t;
  t.schedule = schedule.name;      // so that `sfviz show --plan` can draw the plan beside it
  t.source = "measured";
  t.unit = "us";                   // microseconds from the step's start
  t.stages = schedule.stages;
  t.micro_batches = schedule.micro_batches;
  t.chunks = schedule.chunks;
  t.spans.resize(t.stages);
  // per stage, in the order the stage ran them:
  t.spans[stage].push_back({action, start_us, finish_us});
  sf::pipeline::write_timeline_file("step.timeline.json", t);  // temp file + rename
  // [timeline]
  const sf::pipeline::Timeline back = sf::pipeline::read_timeline_file("step.timeline.json");
  const bool same = back.schedule == "1f1b" && back.spans.size() == 2 && back.spans[0].size() == 1 &&
                    back.spans[0][0].action == action && back.spans[0][0].finish == finish_us;
  std::cout << "timeline of " << back.schedule << " read back " << (same ? "as written" : "changed") << std::endl;
  return same ? 0 : 1;
} catch (const sf::Error& e) {
  std::cerr << "error: " << e.what() << std::endl;
  return 1;
}
