#include <shardflow/train/step_timeline.h>

#include <shardflow/pipeline/timeline_json.h>

namespace sf {

using Clock = std::chrono::steady_clock;

StepTimeline::StepTimeline(Clock::time_point origin) : origin_(origin) {
  timeline_.schedule = std::string(pipeline::kElasticSchedule);
  timeline_.source = "measured";
  timeline_.unit = "us";
  timeline_.stages = 1;
  timeline_.spans.resize(1);
}

double StepTimeline::since_origin(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void StepTimeline::on_train_begin(const RunContext&) {
  std::lock_guard<std::mutex> lock(mu_);
  step_start_ = since_origin(Clock::now());
}

void StepTimeline::on_step_end(const RunContext&) {
  const double now = since_origin(Clock::now());
  std::lock_guard<std::mutex> lock(mu_);
  // The micro-batch is the step's index in this rank's run: a step redone after a rollback is a
  // span of its own.
  pipeline::Span span;
  span.action = {pipeline::ActionKind::kForward, timeline_.micro_batches, 0};
  span.start = step_start_;
  span.finish = now;
  timeline_.spans[0].push_back(span);
  ++timeline_.micro_batches;
  step_start_ = now;
}

void StepTimeline::mark(Clock::time_point when, const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  timeline_.markers.push_back({since_origin(when), label.substr(0, pipeline::kMaxMarkerLabel)});
}

void StepTimeline::write(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  pipeline::Timeline t = timeline_;
  if (t.micro_batches == 0) t.micro_batches = 1;  // a rank lost before its first step
  pipeline::write_timeline_file(path, t);
}

}  // namespace sf
