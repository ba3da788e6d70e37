// CausalMask's sharding rule (ops/kernels/dropout.cc): one loop per dim of the scores, shared
// with the output. Batch, heads, queries and keys all split freely and nothing is
// communicated: whether an entry is masked depends on its global query and key positions only,
// which the lowering gives the local op as the global positions of its block's first query row
// and key column (q_offset, k_offset). A block of keys may then be masked entirely for its
// queries; a softmax after the mask takes the key dim whole (softmax_rule.cc), and every whole
// row keeps its diagonal.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
LoopNest causal_mask_nest(const Node&, const std::vector<Shape>& inputs) {
  const int r = static_cast<int>(inputs[0].size());
  LoopNest nest;
  std::vector<int> dims;
  for (int d = 0; d < r; ++d) {
    nest.loops.push_back(d == r - 2 ? fmt::format("d{} (query)", d)
                         : d == r - 1 ? fmt::format("d{} (key)", d)
                                      : fmt::format("d{}", d));
    dims.push_back(d);
  }
  nest.whole.assign(r, false);
  nest.inputs = {dims};
  nest.output = dims;
  return nest;
}

Value causal_mask_lower(GraphBuilder& b, const LowerContext& ctx) {
  const std::vector<DimSlice>& block = ctx.in_slices[0];
  const size_t r = block.size();
  Attrs attrs = ctx.node.attrs;
  // Offsets already on the global node (itself a block) add to this rank's.
  attrs.set("q_offset", ctx.node.attrs.get_int("q_offset", 0) + block[r - 2].offset);
  attrs.set("k_offset", ctx.node.attrs.get_int("k_offset", 0) + block[r - 1].offset);
  return b.op("CausalMask", ctx.in, std::move(attrs), ctx.node.name);
}
}  // namespace

const ShardingRule kCausalMaskRule{causal_mask_nest, causal_mask_lower};

}  // namespace sf
