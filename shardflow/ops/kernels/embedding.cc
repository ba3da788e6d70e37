// A token embedding: the lookup of one table row per id (a GPT's wte, MindSpore's
// nn.Embedding), written so that a table split by rows (vocabulary parallel, Megatron-LM's
// VocabParallelEmbedding) needs no other op:
//
//   EmbeddingLookup(table f32 (R, h), ids i32 of any shape) -> ids.shape + (h)
//     attrs offset (0): the global row of the table's first row; vocab (R): the global rows.
//     Output row p is table[ids[p] - offset] when offset <= ids[p] < offset + R, else zeros:
//     another rank holds that row, and the sum of every rank's result (an AllReduce, or a
//     ReduceScatter) is the whole lookup. Every id must lie in [0, vocab): an id outside it
//     names no row on any rank, so it is refused rather than looked up as zeros.
//   EmbeddingLookupGrad(ids, dout (ids.shape + (h))) attrs rows (R), offset (0) -> (R, h):
//     the table's gradient, dout's row p added into row ids[p] - offset for the ids in range,
//     the others skipped (the forward has checked them against the vocabulary). A repeated id
//     accumulates: its row was read once per occurrence.
// The ids get no gradient: they are integers.
//
// Plain row loops: one copy or one add of h floats per id, in id order.
#include <algorithm>
#include <cstring>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// Where this table's rows sit in the vocabulary.
struct RowRange {
  int64_t offset = 0;  // the global row of local row 0
  int64_t rows = 0;    // the local rows
};

void check_ids(const Node& n, const Node& ids) {
  SF_ENFORCE(ids.dtype == DType::kI32, ShapeError, "{}: ids must be i32, got {}{}", node_label(n),
             dtype_name(ids.dtype), brief_shape(ids.shape));
}

TypeInfo infer_lookup(const Node& n, const std::vector<const Node*>& in) {
  const Node& table = *in[0];
  SF_ENFORCE(table.dtype == DType::kF32 && table.shape.size() == 2, ShapeError,
             "{}: table must be f32 (rows, hidden), got {}{}", node_label(n), dtype_name(table.dtype),
             brief_shape(table.shape));
  check_ids(n, *in[1]);
  const int64_t rows = table.shape[0];
  const int64_t offset = n.attrs.get_int("offset", 0), vocab = n.attrs.get_int("vocab", rows);
  SF_ENFORCE(offset >= 0 && offset + rows <= vocab, InvalidArgument,
             "{}: the table's rows [{}, {}) must lie within the vocabulary [0, {})", node_label(n), offset,
             offset + rows, vocab);
  Shape s = in[1]->shape;
  s.push_back(table.shape[1]);
  return {s, DType::kF32};
}

void forward_lookup(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t rows = in[0].dim(0), h = in[0].dim(1);
  const int64_t offset = n.attrs.get_int("offset", 0), vocab = n.attrs.get_int("vocab", rows);
  const float* table = in[0].f32();
  const int32_t* ids = in[1].i32();
  float* o = out.f32();
  const int64_t count = in[1].numel();
  for (int64_t p = 0; p < count; ++p, o += h) {
    const int64_t id = ids[p];
    SF_ENFORCE(id >= 0 && id < vocab, InvalidArgument, "{}: id {} at position {} is outside the vocabulary [0, {})",
               node_label(n), id, p, vocab);
    const int64_t local = id - offset;
    if (local >= 0 && local < rows) {
      if (h > 0) std::memcpy(o, table + local * h, static_cast<size_t>(h) * sizeof(float));
    } else {
      for (int64_t k = 0; k < h; ++k) o[k] = 0.0f;
    }
  }
}

RowRange grad_rows(const Node& n) {
  SF_ENFORCE(n.attrs.has("rows"), InvalidArgument, "{}: attr rows (the table's rows) is required", node_label(n));
  const RowRange r{n.attrs.get_int("offset", 0), n.attrs.get_int("rows")};
  SF_ENFORCE(r.rows >= 0 && r.offset >= 0, InvalidArgument, "{}: rows {} and offset {} must be >= 0", node_label(n),
             r.rows, r.offset);
  return r;
}

TypeInfo infer_lookup_grad(const Node& n, const std::vector<const Node*>& in) {
  const Node& ids = *in[0];
  const Node& dout = *in[1];
  check_ids(n, ids);
  const bool leading = dout.shape.size() == ids.shape.size() + 1 &&
                       std::equal(ids.shape.begin(), ids.shape.end(), dout.shape.begin());
  SF_ENFORCE(dout.dtype == DType::kF32 && leading, ShapeError,
             "{}: dout must be f32 of ids' shape {} plus a hidden dim, got {}{}", node_label(n),
             brief_shape(ids.shape), dtype_name(dout.dtype), brief_shape(dout.shape));
  return {{grad_rows(n).rows, dout.shape.back()}, DType::kF32};
}

void forward_lookup_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const RowRange r = grad_rows(n);
  const int64_t h = out.dim(1);
  const int32_t* ids = in[0].i32();
  const float* g = in[1].f32();
  float* table = out.f32();
  out.zero();
  const int64_t count = in[0].numel();
  for (int64_t p = 0; p < count; ++p, g += h) {
    const int64_t local = ids[p] - r.offset;
    if (local < 0 || local >= r.rows) continue;  // another rank's row, or refused by the forward
    float* __restrict row = table + local * h;
    for (int64_t k = 0; k < h; ++k) row[k] += g[k];
  }
}

std::vector<int> grad_lookup(GradContext& ctx, const Node& fwd, int dout) {
  if (!ctx.wants(0)) return {-1, -1};
  const int table = fwd.inputs[0], ids = fwd.inputs[1];
  return {ctx.emit("EmbeddingLookupGrad", {ids, dout},
                   {{"rows", ctx.node(table).shape[0]}, {"offset", fwd.attrs.get_int("offset", 0)}}),
          -1};
}
}  // namespace

void register_embedding_ops(OpRegistry& r) {
  r.add({.name = "EmbeddingLookup", .arity = 2, .infer = infer_lookup, .forward = forward_lookup, .grad = grad_lookup});
  r.add({.name = "EmbeddingLookupGrad",
         .arity = 2,
         .infer = infer_lookup_grad,
         .forward = forward_lookup_grad,
         .grad = {}});
}

}  // namespace sf
