// StridedSlice's sharding rule (ops/kernels/slice.cc): one loop per dim. A dim taken entire
// (begin 0, end past its size, stride 1) keeps its split: every rank slices its own block
// entire. A dim really sliced is a whole loop: the kernel's begin and end are global indices,
// so a split there is gathered before the op. The lowering rewrites each entire dim's range to
// the local block, so an end given as "to the end" (a large number, clamped) stays right.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <algorithm>

#include <fmt/format.h>

namespace sf {

namespace {
std::vector<int64_t> ints(const Node& n, const char* key) {
  return n.attrs.has(key) ? n.attrs.get_ints(key) : std::vector<int64_t>{};
}

// Whether dim d of a tensor of shape `in` is taken entire.
bool entire(const Node& n, const Shape& in, size_t d) {
  const std::vector<int64_t> begin = ints(n, "begin"), end = ints(n, "end"), strides = ints(n, "strides");
  if (d >= begin.size()) return true;
  const int64_t dim = in[d];
  const int64_t b = std::clamp(begin[d] < 0 ? begin[d] + dim : begin[d], int64_t{0}, dim);
  const int64_t e = std::clamp(end[d] < 0 ? end[d] + dim : end[d], int64_t{0}, dim);
  const int64_t st = strides.empty() ? 1 : strides[d];
  return b == 0 && e == dim && st == 1;
}

LoopNest strided_slice_nest(const Node& node, const std::vector<Shape>& inputs) {
  LoopNest nest;
  std::vector<int> dims;
  for (size_t d = 0; d < inputs[0].size(); ++d) {
    const bool whole = !entire(node, inputs[0], d);
    nest.loops.push_back(whole ? fmt::format("d{} (sliced)", d) : fmt::format("d{}", d));
    nest.whole.push_back(whole);
    dims.push_back(static_cast<int>(d));
  }
  nest.inputs = {dims};
  nest.output = dims;
  return nest;
}

Value strided_slice_lower(GraphBuilder& b, const LowerContext& ctx) {
  const Node& n = ctx.node;
  std::vector<int64_t> begin = ints(n, "begin"), end = ints(n, "end");
  // An entire dim has the input's size in the output too, so a block smaller than the output's
  // dim is a split entire dim. A sliced dim's input is whole, never smaller than its output.
  const Shape& global = n.shape;
  for (size_t d = 0; d < begin.size(); ++d)
    if (ctx.in_slices[0][d].extent < global[d]) {
      begin[d] = 0;
      end[d] = ctx.in_slices[0][d].extent;  // split, so entire: this rank's block
    }
  Attrs attrs = n.attrs;
  if (!begin.empty()) {
    attrs.set("begin", begin);
    attrs.set("end", end);
  }
  return b.op("StridedSlice", ctx.in, std::move(attrs), n.name);
}
}  // namespace

const ShardingRule kStridedSliceRule{strided_slice_nest, strided_slice_lower};

}  // namespace sf
