// Busy time, bubbles and the activation stash of a timeline, computed as the simulator does, and
// the time its stages spent in their own collectives.
#include <shardflow/pipeline/timeline_stats.h>

#include <algorithm>
#include <limits>
#include <utility>

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

using Interval = std::pair<double, double>;

// The union of `in` as disjoint intervals in time order.
std::vector<Interval> merged(std::vector<Interval> in) {
  std::sort(in.begin(), in.end());
  std::vector<Interval> out;
  for (const Interval& i : in) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval>& in) {
  double total = 0;
  for (const Interval& i : in) total += i.second - i.first;
  return total;
}

// How long two unions of disjoint intervals overlap.
double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    total += std::max(0.0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return total;
}

// The stage's collective figures: concurrent collectives count once, and only their time inside
// compute spans counts as compute spent on communication.
void collective_figures(const std::vector<Span>& spans, const std::vector<CollectiveSpan>& collectives,
                        StageStats& st) {
  if (collectives.empty()) return;
  std::vector<Interval> compute, comm;
  for (const Span& s : spans)
    if (is_compute(s.action.kind)) compute.emplace_back(s.start, s.finish);
  for (const CollectiveSpan& c : collectives) comm.emplace_back(c.start, c.finish);
  const std::vector<Interval> busy = merged(std::move(compute));
  const std::vector<Interval> talk = merged(std::move(comm));
  st.collectives = static_cast<int>(collectives.size());
  st.collective = length(talk);
  st.collective_in_compute = overlap(talk, busy);
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
    if (k < t.collectives.size()) collective_figures(t.spans[k], t.collectives[k], st);
    r.collectives += st.collectives;
    r.collective += st.collective;
    r.collective_in_compute += st.collective_in_compute;
  }
  const double area = static_cast<double>(t.spans.size()) * r.makespan;
  r.bubble_fraction = area > 0 ? 1 - total_busy / area : 0;
  r.hidden_transfer_share = r.transfer > 0 ? r.hidden_transfer / r.transfer : 0;
  r.collective_share = total_busy > 0 ? r.collective_in_compute / total_busy : 0;
  return r;
}

}  // namespace sf::pipeline
