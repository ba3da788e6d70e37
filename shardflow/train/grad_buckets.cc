#include <shardflow/train/grad_buckets.h>

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

#include <shardflow/core/error.h>

namespace sf {

std::vector<std::vector<size_t>> plan_buckets(const std::vector<int64_t>& bytes, int64_t bucket_bytes) {
  SF_ENFORCE(bucket_bytes >= 0, InvalidArgument, "gradient buckets: bucket_bytes must be >= 0, got {}", bucket_bytes);
  std::vector<std::vector<size_t>> buckets;
  std::vector<size_t> small;
  int64_t filled = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] < kSmallGradientBytes) {
      small.push_back(i);
      continue;
    }
    if (buckets.empty() || filled >= bucket_bytes) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(i);
    filled += bytes[i];
  }
  if (!small.empty()) buckets.push_back(std::move(small));
  return buckets;
}

ReducedGradients append_grad_all_reduce(Graph& g, const std::vector<int>& grads, const GroupRef& group,
                                        int64_t bucket_bytes, float scale) {
  // Backward order: the gradient computed first has the smallest node id.
  std::vector<size_t> order(grads.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return grads[a] < grads[b]; });
  std::vector<int64_t> bytes;
  for (size_t i : order) {
    const Node& n = g.node(grads[i]);
    SF_ENFORCE(n.dtype == DType::kF32, InvalidArgument, "gradient buckets: {} is {}, only f32 gradients are reduced",
               node_label(n), dtype_name(n.dtype));
    bytes.push_back(numel(n.shape) * 4);
  }
  ReducedGradients r;
  r.node.assign(grads.size(), -1);
  r.offset.assign(grads.size(), 0);
  const Attrs on_group{{"group", group.name}, {"group_size", group.size}, {"op", std::string("sum")}};
  for (const auto& planned : plan_buckets(bytes, bucket_bytes)) {
    const size_t k = r.buckets.size();
    std::vector<size_t> members;
    for (size_t j : planned) members.push_back(order[j]);
    int packed = grads[members[0]];
    if (members.size() > 1) {
      std::vector<int> inputs;
      for (size_t m : members) inputs.push_back(grads[m]);
      packed = g.add("FlattenConcat", inputs, {}, fmt::format("GradReducer/bucket{}/FlattenConcat", k));
    }
    const int reduced = g.add("AllReduce", {packed}, on_group, fmt::format("GradReducer/bucket{}/AllReduce", k));
    int value = reduced;
    if (scale != 1.0f) {
      const int s = g.add("Fill", {}, {{"shape", Shape{}}, {"value", static_cast<double>(scale)}},
                          fmt::format("GradReducer/bucket{}/Scale", k));
      value = g.add("Mul", {reduced, s}, {}, fmt::format("GradReducer/bucket{}/Mean", k));
    }
    int64_t offset = 0;
    for (size_t m : members) {
      r.node[m] = value;
      r.offset[m] = members.size() > 1 ? offset : 0;
      offset += numel(g.node(grads[m]).shape);
    }
    r.buckets.push_back(std::move(members));
    r.all_reduce.push_back(reduced);
  }
  return r;
}

std::vector<int> unpack_reduced(Graph& g, const ReducedGradients& r, const std::vector<int>& grads) {
  std::vector<int> out(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    const Node& grad = g.node(grads[i]);
    const Shape shape = grad.shape;
    if (g.node(r.node[i]).shape == shape && r.offset[i] == 0) {
      out[i] = r.node[i];
      continue;
    }
    const int64_t n = numel(shape);
    const int slice = g.add("StridedSlice", {r.node[i]},
                            {{"begin", std::vector<int64_t>{r.offset[i]}}, {"end", std::vector<int64_t>{r.offset[i] + n}}},
                            fmt::format("GradReducer/grad{}/Slice", i));
    out[i] = g.add("Reshape", {slice}, {{"shape", shape}}, fmt::format("GradReducer/grad{}/Reshape", i));
  }
  return out;
}

}  // namespace sf
