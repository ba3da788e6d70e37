#include <shardflow/parallel/redistribution/layout_edits.h>

#include <fmt/format.h>

#include <algorithm>

namespace sf {

std::vector<std::vector<int>> nonempty_subsets(const std::vector<int>& axes) {
  std::vector<std::vector<int>> out;
  for (uint32_t mask = 1; mask < (1u << axes.size()); ++mask) {
    out.emplace_back();
    for (size_t i = 0; i < axes.size(); ++i)
      if (mask & (1u << i)) out.back().push_back(axes[i]);
  }
  return out;
}

std::vector<std::vector<int>> ascending_tails(const std::vector<int>& axes) {
  std::vector<std::vector<int>> out;
  for (size_t len = 1; len <= axes.size(); ++len) {
    const auto begin = axes.end() - static_cast<std::ptrdiff_t>(len);
    if (len > 1 && *begin >= *(begin + 1)) break;
    out.emplace_back(begin, axes.end());
  }
  return out;
}

TensorLayout without_tail(const TensorLayout& from, int dim, const std::vector<int>& axes) {
  TensorLayout::TensorMap map = from.tensor_map();
  map[dim].resize(map[dim].size() - axes.size());
  return TensorLayout(from.mesh(), std::move(map), from.partial(), from.axis_names());
}

TensorLayout with_tail(const TensorLayout& from, int dim, const std::vector<int>& axes) {
  TensorLayout::TensorMap map = from.tensor_map();
  map[dim].insert(map[dim].end(), axes.begin(), axes.end());
  std::vector<int> partial;
  for (int a : from.partial())
    if (std::find(axes.begin(), axes.end(), a) == axes.end()) partial.push_back(a);
  return TensorLayout(from.mesh(), std::move(map), std::move(partial), from.axis_names());
}

TensorLayout with_partial(const TensorLayout& from, std::vector<int> partial) {
  return TensorLayout(from.mesh(), from.tensor_map(), std::move(partial), from.axis_names());
}

bool divides(const TensorLayout& layout, const Shape& shape) {
  for (int d = 0; d < layout.dims(); ++d)
    if (shape[d] % layout.splits(d) != 0) return false;
  return true;
}

int64_t shard_bytes(const TensorLayout& layout, const Shape& shape, int64_t element_bytes) {
  return numel(layout.local_shape(shape)) * element_bytes;
}

RedistributionStep make_step(StepKind kind, const TensorLayout& from, TensorLayout after, std::vector<int> axes,
                             std::vector<int> dims, double bytes) {
  RedistributionStep s;
  s.kind = kind;
  s.before = from;
  s.after = std::move(after);
  s.axes = std::move(axes);
  s.dims = std::move(dims);
  s.bytes = bytes;
  return s;
}

std::vector<Value> split_into(GraphBuilder& b, Value x, int dim, int64_t n) {
  const Shape& s = b.shape(x);
  const int64_t piece = s[dim] / n;
  std::vector<Value> out;
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int64_t> begin(s.size(), 0), end = s;
    begin[dim] = k * piece;
    end[dim] = (k + 1) * piece;
    out.push_back(b.strided_slice(x, begin, end));
  }
  return out;
}

std::string group_name(const std::vector<int>& ranks) { return fmt::format("{}", fmt::join(ranks, "-")); }

GroupRef step_group(const RedistributionStep& step, int rank) {
  const std::vector<int> g = step.group(rank);
  return {group_name(g), static_cast<int64_t>(g.size())};
}

}  // namespace sf

