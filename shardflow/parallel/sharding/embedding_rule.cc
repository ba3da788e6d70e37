// EmbeddingLookup's sharding rule (ops/kernels/embedding.cc), vocabulary parallel as in
// Megatron-LM's VocabParallelEmbedding, and EmbeddingLookupGrad's.
//
// EmbeddingLookup(table (V, h), ids (d0, ...)) -> (d0, ..., h) has one loop per ids dim (shared
// with the output's leading dims), "hidden" (the table's columns and the output's last dim) and
// "vocab" (the table's rows), absent from the output. A split of the ids dims (data or sequence
// parallel) or of hidden needs no communication. A split of vocab gives each rank a block of
// rows: its lookup fills the positions whose ids fall in its block and zeros the others, so the
// output is partial over vocab's axes, a sum that the AllReduce after the op completes (the
// masked lookup + AllReduce of Megatron), or a ReduceScatter under an out_strategy that splits
// the sequence. The lowering tells the local op where its rows start (offset) and the size of
// the whole vocabulary (vocab), which it checks every id against.
//
// EmbeddingLookupGrad(ids, dout) -> (rows, h) reduces over the ids loops, so their split leaves
// the table's gradient partial; its vocab loop appears in the output only, so no input strategy
// splits it, but the lowering still gives the local op its block of rows (rows, offset).
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <fmt/format.h>

namespace sf {

namespace {
struct Loops {
  LoopNest nest;
  std::vector<int> ids;  // one loop per ids dim
  int vocab = 0, hidden = 0;
};

Loops loops(int ids_dims) {
  Loops l;
  for (int d = 0; d < ids_dims; ++d) {
    l.nest.loops.push_back(fmt::format("d{}", d));
    l.ids.push_back(d);
  }
  l.vocab = ids_dims;
  l.hidden = ids_dims + 1;
  l.nest.loops.insert(l.nest.loops.end(), {"vocab (table rows)", "hidden"});
  l.nest.whole.assign(l.nest.loops.size(), false);
  return l;
}

std::vector<int> with_hidden(const Loops& l) {
  std::vector<int> dims = l.ids;
  dims.push_back(l.hidden);
  return dims;
}

LoopNest lookup_nest(const Node&, const std::vector<Shape>& inputs) {
  Loops l = loops(static_cast<int>(inputs[1].size()));
  l.nest.inputs = {{l.vocab, l.hidden}, l.ids};
  l.nest.output = with_hidden(l);
  return l.nest;
}

Value lookup_lower(GraphBuilder& b, const LowerContext& ctx) {
  const DimSlice& rows = ctx.in_slices[0][0];
  Attrs attrs = ctx.node.attrs;
  // The global node may itself hold rows [offset, ...) of a larger vocabulary; this rank's
  // block starts rows.offset further on.
  attrs.set("offset", ctx.node.attrs.get_int("offset", 0) + rows.offset);
  // Without a vocab attr the vocabulary is the global table's rows: the block's rows times the
  // number of blocks, the size of the group of ranks that split the table's dim 0 (under a
  // vocabulary split the same group as the AllReduce of the partial lookups).
  if (!ctx.node.attrs.has("vocab")) attrs.set("vocab", rows.extent * ctx.group_along(0, 0).size);
  return b.op("EmbeddingLookup", ctx.in, std::move(attrs), ctx.node.name);
}

LoopNest grad_nest(const Node&, const std::vector<Shape>& inputs) {
  Loops l = loops(static_cast<int>(inputs[0].size()));
  l.nest.inputs = {l.ids, with_hidden(l)};
  l.nest.output = {l.vocab, l.hidden};
  return l.nest;
}

Value grad_lower(GraphBuilder& b, const LowerContext& ctx) {
  Attrs attrs = ctx.node.attrs;
  attrs.set("rows", ctx.local_out[0]);
  attrs.set("offset", ctx.node.attrs.get_int("offset", 0) + ctx.out_slice[0].offset);
  return b.op("EmbeddingLookupGrad", ctx.in, std::move(attrs), ctx.node.name);
}
}  // namespace

const ShardingRule kEmbeddingRule{lookup_nest, lookup_lower};
const ShardingRule kEmbeddingGradRule{grad_nest, grad_lower};

}  // namespace sf
