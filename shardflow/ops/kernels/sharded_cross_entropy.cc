// The local ops of a cross-entropy over a vocabulary split into class blocks (Megatron-LM's
// vocab-parallel cross-entropy): each rank holds the logits' columns [offset, offset + c) of a
// row and never sees the others, so the row's log-sum-exp is assembled from per-block partial
// results reduced across the blocks' ranks (AllReduce, added by the sharding rule in
// parallel/sharding/loss_rules.cc) instead of gathering the logits.
//
// Every op takes attrs `offset` (the global class of the block's first column) and `classes`
// (the global number of real classes); a column whose global class is >= classes pads the
// vocabulary so that it divides the tensor-parallel degree, and is neither in the max nor in the
// sum, and gets no gradient.
//
//   CrossEntropyShardMax(x (N, c)) -> (N,): the row max over the block's real columns, the lowest
//     finite float where the block has none (so that the max over blocks is the real one and
//     exp(x - m) stays finite). No gradient: the max only keeps exp from overflowing, and the
//     loss does not depend on it.
//   CrossEntropyShardSums(x (N, c), labels (N,) i32, m (N,)) -> (N, 2): column 0 the sum over the
//     real columns of exp(x - m), column 1 x[label - offset] if the label is in the block, else 0.
//     Summed over the blocks, column 0 is the row's sum of exp and column 1 its label's logit.
//   CrossEntropyShardSumsGrad(x, labels, m, dout (N, 2)) -> (N, c): exp(x - m) * dout[:, 0] +
//     onehot(label) * dout[:, 1], 0 on padding. Treating m as a constant is exact: the loss
//     log(sum) + m does not change with m.
//   CrossEntropyFromSums(sums (N, 2), m (N,)) -> (): the mean over rows of
//     log(sums[:, 0]) + m - sums[:, 1], the rows' -log softmax(x)[label].
//   CrossEntropyFromSumsGrad(sums, dout) -> (N, 2): (1 / (N * sums[:, 0]), -1 / N) * dout.
// Labels and m get no gradient. Sums are accumulated in double within a row.
#include <algorithm>
#include <cmath>
#include <limits>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/label_check.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// Where the block lies in the vocabulary, and how many of its columns are real classes.
struct Block {
  int64_t offset = 0;   // global class of column 0
  int64_t classes = 0;  // global number of real classes
  int64_t real = 0;     // columns [0, real) of the block are classes, the rest padding
};

Block block_of(const Node& n, int64_t cols) {
  Block b;
  b.offset = n.attrs.get_int("offset", 0);
  b.classes = n.attrs.get_int("classes", b.offset + cols);
  SF_ENFORCE(b.offset >= 0, InvalidArgument, "{}: offset {} must be >= 0", node_label(n), b.offset);
  SF_ENFORCE(b.classes >= 1, InvalidArgument, "{}: classes {} must be >= 1", node_label(n), b.classes);
  b.real = std::clamp<int64_t>(b.classes - b.offset, 0, cols);
  return b;
}

void check_x(const Node& n, const Node& x) {
  SF_ENFORCE(x.dtype == DType::kF32 && x.shape.size() == 2, ShapeError, "{}: x must be f32 (N, c), got {}{}",
             node_label(n), dtype_name(x.dtype), brief_shape(x.shape));
}

// `v` must be of dtype `dt` and shape `want`, named `what` in the message.
void check_shape(const Node& n, const Node& v, DType dt, const Shape& want, const char* what) {
  SF_ENFORCE(v.dtype == dt && v.shape == want, ShapeError, "{}: {} must be {}{}, got {}{}", node_label(n), what,
             dtype_name(dt), brief_shape(want), dtype_name(v.dtype), brief_shape(v.shape));
}

TypeInfo infer_max(const Node& n, const std::vector<const Node*>& in) {
  check_x(n, *in[0]);
  block_of(n, in[0]->shape[1]);
  return {{in[0]->shape[0]}, DType::kF32};
}

void forward_shard_max(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t rows = in[0].dim(0), cols = in[0].dim(1);
  const Block b = block_of(n, cols);
  const float* x = in[0].f32();
  float* m = out.f32();
  for (int64_t r = 0; r < rows; ++r, x += cols) {
    float mx = std::numeric_limits<float>::lowest();
    for (int64_t c = 0; c < b.real; ++c) mx = std::max(mx, x[c]);
    m[r] = mx;
  }
}

std::vector<int> grad_none(GradContext&, const Node& fwd, int) {
  return std::vector<int>(fwd.inputs.size(), -1);
}

void check_sums_inputs(const Node& n, const std::vector<const Node*>& in) {
  check_x(n, *in[0]);
  const int64_t rows = in[0]->shape[0];
  check_shape(n, *in[1], DType::kI32, {rows}, "labels");
  check_shape(n, *in[2], DType::kF32, {rows}, "m");
  block_of(n, in[0]->shape[1]);
}

TypeInfo infer_sums(const Node& n, const std::vector<const Node*>& in) {
  check_sums_inputs(n, in);
  return {{in[0]->shape[0], 2}, DType::kF32};
}

void forward_sums(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t rows = in[0].dim(0), cols = in[0].dim(1);
  const Block b = block_of(n, cols);
  const float* x = in[0].f32();
  const int32_t* labels = in[1].i32();
  const float* m = in[2].f32();
  float* o = out.f32();
  for (int64_t r = 0; r < rows; ++r, x += cols, o += 2) {
    const int64_t l = label_at(n, labels, r, b.classes) - b.offset;
    double sum = 0.0;
    for (int64_t c = 0; c < b.real; ++c) sum += std::exp(x[c] - m[r]);
    o[0] = static_cast<float>(sum);
    o[1] = l >= 0 && l < b.real ? x[l] : 0.0f;
  }
}

std::vector<int> grad_sums(GradContext& ctx, const Node& fwd, int dout) {
  if (!ctx.wants(0)) return {-1, -1, -1};
  const std::vector<int>& in = fwd.inputs;
  return {ctx.emit("CrossEntropyShardSumsGrad", {in[0], in[1], in[2], dout}, fwd.attrs), -1, -1};
}

TypeInfo infer_sums_grad(const Node& n, const std::vector<const Node*>& in) {
  check_sums_inputs(n, in);
  check_shape(n, *in[3], DType::kF32, {in[0]->shape[0], 2}, "dout");
  return {in[0]->shape, DType::kF32};
}

void forward_sums_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t rows = in[0].dim(0), cols = in[0].dim(1);
  const Block b = block_of(n, cols);
  const float* x = in[0].f32();
  const int32_t* labels = in[1].i32();
  const float* m = in[2].f32();
  const float* g = in[3].f32();
  float* o = out.f32();
  for (int64_t r = 0; r < rows; ++r, x += cols, o += cols, g += 2) {
    const int64_t l = label_at(n, labels, r, b.classes) - b.offset;
    for (int64_t c = 0; c < b.real; ++c) o[c] = std::exp(x[c] - m[r]) * g[0];
    for (int64_t c = b.real; c < cols; ++c) o[c] = 0.0f;
    if (l >= 0 && l < b.real) o[l] += g[1];
  }
}

TypeInfo infer_from_sums(const Node& n, const std::vector<const Node*>& in) {
  const Node& sums = *in[0];
  SF_ENFORCE(sums.dtype == DType::kF32 && sums.shape.size() == 2 && sums.shape[1] == 2, ShapeError,
             "{}: sums must be f32 (N, 2), got {}{}", node_label(n), dtype_name(sums.dtype), brief_shape(sums.shape));
  check_shape(n, *in[1], DType::kF32, {sums.shape[0]}, "m");
  return {{}, DType::kF32};
}

void forward_from_sums(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t rows = in[0].dim(0);
  const float* s = in[0].f32();
  const float* m = in[1].f32();
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r, s += 2) {
    // A zero sum is a row whose blocks were all padding: refused, or the loss would be inf.
    SF_ENFORCE(s[0] > 0.0f, InvalidArgument, "{}: row {} has a sum of exp of {}; it must be > 0", node_label(n), r,
               s[0]);
    total += std::log(static_cast<double>(s[0])) + m[r] - s[1];
  }
  out.f32()[0] = rows ? static_cast<float>(total / static_cast<double>(rows)) : 0.0f;
}

std::vector<int> grad_from_sums(GradContext& ctx, const Node& fwd, int dout) {
  if (!ctx.wants(0)) return {-1, -1};
  return {ctx.emit("CrossEntropyFromSumsGrad", {fwd.inputs[0], dout}), -1};
}

TypeInfo infer_from_sums_grad(const Node& n, const std::vector<const Node*>& in) {
  const Node& sums = *in[0];
  SF_ENFORCE(sums.dtype == DType::kF32 && sums.shape.size() == 2 && sums.shape[1] == 2, ShapeError,
             "{}: sums must be f32 (N, 2), got {}{}", node_label(n), dtype_name(sums.dtype), brief_shape(sums.shape));
  SF_ENFORCE(in[1]->dtype == DType::kF32 && numel(in[1]->shape) == 1, ShapeError,
             "{}: dout must be an f32 scalar, got {}{}", node_label(n), dtype_name(in[1]->dtype),
             brief_shape(in[1]->shape));
  return {sums.shape, DType::kF32};
}

void forward_from_sums_grad(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t rows = in[0].dim(0);
  const float* s = in[0].f32();
  float* o = out.f32();
  const double scale = rows ? static_cast<double>(in[1].f32()[0]) / static_cast<double>(rows) : 0.0;
  for (int64_t r = 0; r < rows; ++r, s += 2, o += 2) {
    o[0] = static_cast<float>(scale / s[0]);
    o[1] = static_cast<float>(-scale);
  }
}

}  // namespace

void register_sharded_cross_entropy_ops(OpRegistry& r) {
  r.add({.name = "CrossEntropyShardMax", .arity = 1, .infer = infer_max, .forward = forward_shard_max,
         .grad = grad_none});
  r.add({.name = "CrossEntropyShardSums", .arity = 3, .infer = infer_sums, .forward = forward_sums,
         .grad = grad_sums});
  r.add({.name = "CrossEntropyShardSumsGrad",
         .arity = 4,
         .infer = infer_sums_grad,
         .forward = forward_sums_grad,
         .grad = {}});
  r.add({.name = "CrossEntropyFromSums",
         .arity = 2,
         .infer = infer_from_sums,
         .forward = forward_from_sums,
         .grad = grad_from_sums});
  r.add({.name = "CrossEntropyFromSumsGrad",
         .arity = 2,
         .infer = infer_from_sums_grad,
         .forward = forward_from_sums_grad,
         .grad = {}});
}

}  // namespace sf
