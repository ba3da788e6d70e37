// Busy time, bubbles and the activation stash of a timeline, computed as the simulator does.
#include <shardflow/pipeline/timeline_stats.h>

#include <algorithm>
#include <limits>

namespace sf::pipeline {
namespace {

bool has_weight_pass(const Timeline& t) {
  for (const auto& stage : t.spans) {
    for (const Span& s : stage) {
      if (s.action.kind == ActionKind::kWeight) return true;
    }
  }
  return false;
}

// Walks the stage's compute spans in time order (a stage computes one thing at a time, so
// this is its run order); F stashes its (micro-batch, chunk), the releasing pass frees it.
int peak_stashed(const std::vector<Span>& spans, ActionKind release) {
  std::vector<const Span*> order;
  for (const Span& s : spans) {
    if (is_compute(s.action.kind)) order.push_back(&s);
  }
  std::stable_sort(order.begin(), order.end(), [](const Span* a, const Span* b) { return a->start < b->start; });
  int stashed = 0;
  int peak = 0;
  for (const Span* s : order) {
    if (s->action.kind == ActionKind::kForward) peak = std::max(peak, ++stashed);
    if (s->action.kind == release) --stashed;
  }
  return peak;
}

}  // namespace

TimelineStats timeline_stats(const Timeline& t) {
  TimelineStats r;
  r.stages.resize(t.spans.size());
  double first = std::numeric_limits<double>::infinity();
  double last = -std::numeric_limits<double>::infinity();
  for (const auto& stage : t.spans) {
    for (const Span& s : stage) {
      first = std::min(first, s.start);
      last = std::max(last, s.finish);
    }
  }
  if (first > last) return r;  // no spans at all
  r.start = first;
  r.finish = last;
  r.makespan = last - first;

  const ActionKind release = has_weight_pass(t) ? ActionKind::kWeight : ActionKind::kBackward;
  double total_busy = 0;
  for (size_t k = 0; k < t.spans.size(); ++k) {
    StageStats& st = r.stages[k];
    for (const Span& s : t.spans[k]) {
      if (!is_compute(s.action.kind)) continue;
      st.busy += s.finish - s.start;
      ++st.compute_actions;
    }
    // Transfers: how much of each ran while the stage computed (communication hidden behind work).
    for (const Span& s : t.spans[k]) {
      if (is_compute(s.action.kind)) continue;
      st.transfer += s.finish - s.start;
      for (const Span& c : t.spans[k])
        if (is_compute(c.action.kind))
          st.hidden_transfer += std::max(0.0, std::min(s.finish, c.finish) - std::max(s.start, c.start));
    }
    r.transfer += st.transfer;
    r.hidden_transfer += st.hidden_transfer;
    st.idle = r.makespan - st.busy;
    st.bubble_fraction = r.makespan > 0 ? st.idle / r.makespan : 0;
    st.peak_stashed = peak_stashed(t.spans[k], release);
    total_busy += st.busy;
  }
  const double area = static_cast<double>(t.spans.size()) * r.makespan;
  r.bubble_fraction = area > 0 ? 1 - total_busy / area : 0;
  r.hidden_transfer_share = r.transfer > 0 ? r.hidden_transfer / r.transfer : 0;
  return r;
}

}  // namespace sf::pipeline
