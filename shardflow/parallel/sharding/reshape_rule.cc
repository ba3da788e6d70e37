// Reshape and Flatten's sharding rule. A transformer under tensor parallel reshapes its hidden
// dim into heads and back ((S*B, h) -> (S, B, nh, d) -> (S*B, h)) at every layer, so a split
// must survive the reshape where it can: gathering the tensor first would undo the parallelism.
//
// The rule walks the dims of x and of the result together and groups them into the smallest
// runs whose products are equal: (8, 64) -> (8, 4, 16) is the runs (8)->(8) and (64)->(4, 16);
// (4, 2, 64) -> (8, 64) is (4, 2)->(8) and (64)->(64). Dims of size 1 join no run (each is a
// whole loop of its own: no split divides it). Within a run the elements keep their row-major
// order, so the run is one flat range on both sides, and a split of its *leading* dim on either
// side into T blocks cuts that range into T contiguous pieces: rank t's block of x's leading
// dim is exactly rank t's block of the result's leading dim, provided T divides both. So the
// two leading dims of a run share one loop (a run of one dim each is the plain kept-dim case),
// and every other dim of a run is a whole loop of its own: a split of it (the 16 of (4, 16),
// or the 2 of (4, 2)) does not stay a block after the reshape, and is gathered by
// redistribution before the op, as MindSpore's Reshape redistributes.
//
// A split of the shared loop is checked against x's dim by shard_op like any input split, but
// it must also divide the result's leading dim, which may be smaller: h = 64 split 8 ways
// reshaped to 4 heads of 16 cannot give each rank a whole number of heads. shard_op refuses
// that in one line naming the op, the loop and the output dim (op_sharding.cc checks every
// output dim against its split), and its default strategy does not split a batch loop that
// does not divide the output. Refusing rather than gathering: the nest cannot depend on the
// strategy, and a silent gather would hide a strategy that defeats the tensor parallelism the
// user asked for; a strategy that wants the gather asks for the heads split it can have.
//
// Shapes with a 0-sized dim fall back to the rule's first form (dim 0 a shared loop when it is
// kept, every other dim whole): they hold no elements to keep in place. Flatten is a merge of
// every dim after 0 and takes the same grouping. The local Reshape gets this rank's block shape
// as its `shape` attribute; the local Flatten computes its own.
#include <shardflow/parallel/sharding/sharding_rule.h>

#include <optional>
#include <utility>

#include <fmt/format.h>

namespace sf {

namespace {

// Per run, its leading dims (x's, the result's), in order; nullopt where the shapes do not
// group (a 0-sized dim, or element counts that differ, which shape inference has refused).
std::optional<std::vector<std::pair<int, int>>> run_leads(const Shape& in, const Shape& out) {
  auto sized = [](const Shape& s) {
    std::vector<int> dims;
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] != 1) dims.push_back(static_cast<int>(d));
    return dims;
  };
  for (const Shape* s : {&in, &out})
    for (int64_t n : *s)
      if (n <= 0) return std::nullopt;
  const std::vector<int> a = sized(in), b = sized(out);
  std::vector<std::pair<int, int>> leads;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    leads.emplace_back(a[i], b[j]);
    int64_t pa = in[a[i++]], pb = out[b[j++]];
    while (pa != pb) {
      if (pa < pb) {
        if (i == a.size()) return std::nullopt;
        pa *= in[a[i++]];
      } else {
        if (j == b.size()) return std::nullopt;
        pb *= out[b[j++]];
      }
    }
  }
  if (i != a.size() || j != b.size()) return std::nullopt;
  return leads;
}

LoopNest reshape_nest(const Node& node, const std::vector<Shape>& inputs) {
  const Shape& in = inputs[0];
  const Shape& out = node.shape;
  std::vector<std::pair<int, int>> leads;
  if (std::optional<std::vector<std::pair<int, int>>> grouped = run_leads(in, out))
    leads = std::move(*grouped);
  else if (!in.empty() && !out.empty() && in[0] == out[0])
    leads = {{0, 0}};
  std::vector<int> shared(out.size(), -1);  // per output dim: the input dim it shares a loop with
  for (const auto& [i, o] : leads) shared[o] = i;
  LoopNest nest;
  // x's dims first, in order, then the result's own: loop order is the order of a tuple
  // strategy's device matrix, and keeps the first form's for the kept-dim-0 case.
  std::vector<int> x(in.size(), -1);
  for (size_t d = 0; d < in.size(); ++d) {
    x[d] = static_cast<int>(nest.loops.size());
    nest.loops.push_back(fmt::format("in d{}", d));
    nest.whole.push_back(true);
  }
  for (size_t d = 0; d < out.size(); ++d) {
    if (shared[d] >= 0) {
      const int l = x[shared[d]];
      nest.output.push_back(l);
      nest.loops[l] = fmt::format("in d{} = out d{}", shared[d], d);
      nest.whole[l] = false;
      continue;
    }
    nest.output.push_back(static_cast<int>(nest.loops.size()));
    nest.loops.push_back(fmt::format("out d{}", d));
    nest.whole.push_back(true);
  }
  nest.inputs = {x};
  return nest;
}

Value reshape_lower(GraphBuilder& b, const LowerContext& ctx) {
  if (ctx.node.op == "Flatten") return b.op("Flatten", ctx.in, ctx.node.attrs, ctx.node.name);
  Attrs attrs = ctx.node.attrs;
  attrs.set("shape", ctx.local_out);
  return b.op("Reshape", ctx.in, std::move(attrs), ctx.node.name);
}

}  // namespace

const ShardingRule kReshapeRule{reshape_nest, reshape_lower};

}  // namespace sf
