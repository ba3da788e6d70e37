#include <shardflow/parallel/redistribution_planner.h>

#include <algorithm>
#include <cmath>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/parallel/mesh_refinement.h>
#include <shardflow/parallel/redistribution/conversion.h>
#include <shardflow/parallel/redistribution/layout_edits.h>

namespace sf {

namespace {

// Searches past this many layouts only for meshes far larger than any job of this project.
constexpr size_t kMaxLayouts = 1 << 20;

// A layout on the search's mesh as a short string: each dim's axes, then the partial ones.
using Key = std::string;
Key key_of(const TensorLayout& l) {
  Key k;
  for (const auto& axes : l.tensor_map()) {
    for (int a : axes) k += static_cast<char>('a' + a);
    k += '|';
  }
  for (int a : l.partial()) k += static_cast<char>('a' + a);
  return k;
}

struct Reached {
  TensorLayout layout;
  int64_t cost = 0;  // bytes sent per rank, times the device count (an integer: every group size divides it)
  int steps = 0;
  int parent = -1;
  RedistributionStep step;  // from the parent
};

// Local steps are taken only toward the target: a Partial step on an axis the target is
// partial on (elsewhere it would only have to be reduced again), a Slice by an axis the target
// splits that dim by. Without the second rule the search would also find plans that cut a
// shard along a replicated axis to reduce less and gather it back, a few bytes cheaper in
// steps nobody expects, and would visit far more layouts.
bool toward(const RedistributionStep& step, const TensorLayout& to) {
  if (step.kind == StepKind::kPartial)
    return std::includes(to.partial().begin(), to.partial().end(), step.axes.begin(), step.axes.end());
  if (step.kind == StepKind::kSlice) {
    const std::vector<int>& want = to.tensor_map()[step.dims[0]];
    return std::find(want.begin(), want.end(), step.axes[0]) != want.end();
  }
  return true;
}

// Dijkstra over layouts on one mesh, from `from` to `to`.
std::vector<RedistributionStep> search(const TensorLayout& from, const TensorLayout& to, const Shape& shape,
                                       int64_t element_bytes, std::string_view what) {
  const double scale = static_cast<double>(from.mesh().device_count());
  std::vector<Reached> reached{{from, 0, 0, -1, {}}};
  std::unordered_map<Key, int> best{{key_of(from), 0}};
  using Entry = std::tuple<int64_t, int, int>;  // cost, steps, index into reached
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  queue.push({0, 0, 0});
  const Key goal = key_of(to);
  while (!queue.empty()) {
    const auto [cost, steps, index] = queue.top();
    queue.pop();
    if (best.at(key_of(reached[index].layout)) != index) continue;  // superseded
    if (key_of(reached[index].layout) == goal) {
      std::vector<RedistributionStep> path;
      for (int i = index; reached[i].parent >= 0; i = reached[i].parent) path.push_back(reached[i].step);
      return {path.rbegin(), path.rend()};
    }
    for (const Conversion& c : conversions())
      for (RedistributionStep& step : c.candidates(reached[index].layout, shape, element_bytes)) {
        if (!toward(step, to)) continue;
        const int64_t next_cost = cost + std::llround(step.bytes * scale);
        const Key k = key_of(step.after);
        const auto it = best.find(k);
        if (it != best.end() &&
            std::make_pair(reached[it->second].cost, reached[it->second].steps) <= std::make_pair(next_cost, steps + 1))
          continue;
        SF_ENFORCE(reached.size() < kMaxLayouts, InvalidArgument,
                   "{}: searching a plan from {} to {} visited more than {} layouts", what, from.str(), to.str(),
                   kMaxLayouts);
        TensorLayout after = step.after;
        reached.push_back({std::move(after), next_cost, steps + 1, index, std::move(step)});
        const int added = static_cast<int>(reached.size()) - 1;
        best[k] = added;
        queue.push({next_cost, steps + 1, added});
      }
  }
  SF_THROW(InvalidArgument, "{}: no sequence of steps turns {} into {} for shape {}", what, from.str(), to.str(),
           brief_shape(shape));
}

// Local steps commute, so a run of them becomes one Slice (all new splits) and one Partial
// (all new partial axes).
std::vector<RedistributionStep> merge_local(const std::vector<RedistributionStep>& steps) {
  std::vector<RedistributionStep> out;
  for (size_t i = 0; i < steps.size();) {
    if (steps[i].communicates()) {
      out.push_back(steps[i++]);
      continue;
    }
    size_t end = i;
    while (end < steps.size() && !steps[end].communicates()) ++end;
    const TensorLayout& first = steps[i].before;
    const TensorLayout& last = steps[end - 1].after;
    std::vector<int> slice_axes, slice_dims, partial_axes;
    for (size_t k = i; k < end; ++k) {
      auto& axes = steps[k].kind == StepKind::kSlice ? slice_axes : partial_axes;
      axes.insert(axes.end(), steps[k].axes.begin(), steps[k].axes.end());
    }
    for (int d = 0; d < first.dims(); ++d)
      if (first.tensor_map()[d] != last.tensor_map()[d]) slice_dims.push_back(d);
    const TensorLayout sliced = with_partial(last, first.partial());
    if (!slice_axes.empty()) out.push_back(make_step(StepKind::kSlice, first, sliced, slice_axes, slice_dims, 0));
    if (!partial_axes.empty()) out.push_back(make_step(StepKind::kPartial, sliced, last, partial_axes, {}, 0));
    i = end;
  }
  return out;
}

}  // namespace

RedistributionPlan plan_redistribution(const TensorLayout& from, const TensorLayout& to, const Shape& shape,
                                       DType dtype, std::string_view what) {
  from.check(shape, what);
  to.check(shape, what);
  SF_ENFORCE(from.mesh().device_count() == to.mesh().device_count(), InvalidArgument,
             "{}: cannot redistribute from {} on {} devices to {} on {} devices", what, from.spec(),
             from.mesh().device_count(), to.spec(), to.mesh().device_count());
  RedistributionPlan plan{from, to, shape, dtype, {}};
  const auto element_bytes = static_cast<int64_t>(dtype_size(dtype));
  if (const auto fine = common_refinement(from.mesh(), to.mesh())) {
    plan.steps = search(refine(from, *fine), refine(to, *fine), shape, element_bytes, what);
  } else {
    // Each layout on its own mesh without axes of size 1, then through the replicated layout.
    const auto own = [](const TensorLayout& l) { return refine(l, *common_refinement(l.mesh(), l.mesh())); };
    const TensorLayout src = own(from), dst = own(to);
    const int dims = static_cast<int>(shape.size());
    plan.steps = search(src, TensorLayout::replicated(src.mesh(), dims), shape, element_bytes, what);
    for (RedistributionStep& s : search(TensorLayout::replicated(dst.mesh(), dims), dst, shape, element_bytes, what))
      plan.steps.push_back(std::move(s));
  }
  plan.steps = merge_local(plan.steps);
  return plan;
}

}  // namespace sf
