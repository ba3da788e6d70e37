// Losses, each an f32 scalar (shape ()) averaged over the batch:
//   SoftmaxCrossEntropy(logits (N, C) f32, labels (N,) i32 in [0, classes)), attr classes (C):
//     mean over rows of -log softmax(logits)[label], by a max-subtracted log-sum-exp in double.
//     Only columns < classes are classes: a vocabulary padded so that C divides every
//     tensor-parallel degree has padding columns past them, which are left out of the max and
//     the sum, so the loss is exactly that of the unpadded (N, classes) logits.
//   SoftmaxCrossEntropyGrad(logits, labels, dout), the same attr -> (N, C): (softmax - onehot) *
//     dout / N on the classes, 0 on the padding columns.
//   MSELoss(pred, target), same shapes: mean of (pred - target)^2.
//   MSELossGrad(pred, target, dout): 2 * (pred - target) * dout / numel. The gradient for
//   target is the same op with the two swapped, which is its negative.
// Labels get no gradient. Run once per step over the whole batch: plain row loops.
#include <cmath>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/label_check.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {
void check_logits_labels(const Node& n, const Node& logits, const Node& labels) {
  SF_ENFORCE(logits.dtype == DType::kF32 && logits.shape.size() == 2, ShapeError,
             "{}: logits must be f32 (N, C), got {}{}", node_label(n), dtype_name(logits.dtype),
             brief_shape(logits.shape));
  SF_ENFORCE(labels.dtype == DType::kI32, ShapeError, "{}: labels must be i32, got {}{}", node_label(n),
             dtype_name(labels.dtype), brief_shape(labels.shape));
  SF_ENFORCE(labels.shape.size() == 1 && labels.shape[0] == logits.shape[0], ShapeError,
             "{}: labels must have shape ({},) to match logits {}, got {}", node_label(n), logits.shape[0],
             brief_shape(logits.shape), brief_shape(labels.shape));
}

// The attr `classes` (default: every column), refused outside [1, C]: a class past the last
// column would be read out of the row, and a row with no class has no softmax.
int64_t classes_of(const Node& n, const Shape& logits) {
  const int64_t c = n.attrs.get_int("classes", logits[1]);
  SF_ENFORCE(c >= 1 && c <= logits[1], InvalidArgument, "{}: classes {} must be in [1, {}] (the logits' columns)",
             node_label(n), c, logits[1]);
  return c;
}

TypeInfo infer_sce(const Node& n, const std::vector<const Node*>& in) {
  check_logits_labels(n, *in[0], *in[1]);
  classes_of(n, in[0]->shape);
  return {{}, DType::kF32};
}

void forward_sce(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t rows = in[0].dim(0), cols = in[0].dim(1), classes = classes_of(n, in[0].shape());
  const float* x = in[0].f32();
  const int32_t* labels = in[1].i32();
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r, x += cols) {
    const int32_t l = label_at(n, labels, r, classes);
    float mx = x[0];
    for (int64_t c = 1; c < classes; ++c) mx = std::max(mx, x[c]);
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(x[c] - mx);
    total += std::log(sum) + mx - x[l];  // -log(exp(x_l - mx) / sum)
  }
  out.f32()[0] = rows ? static_cast<float>(total / static_cast<double>(rows)) : 0.0f;
}

TypeInfo infer_sce_grad(const Node& n, const std::vector<const Node*>& in) {
  check_logits_labels(n, *in[0], *in[1]);
  classes_of(n, in[0]->shape);
  SF_ENFORCE(in[2]->dtype == DType::kF32 && numel(in[2]->shape) == 1, ShapeError,
             "{}: dout must be an f32 scalar, got {}{}", node_label(n), dtype_name(in[2]->dtype),
             brief_shape(in[2]->shape));
  return {in[0]->shape, DType::kF32};
}

void forward_sce_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const int64_t rows = in[0].dim(0), cols = in[0].dim(1), classes = classes_of(n, in[0].shape());
  const float* x = in[0].f32();
  const int32_t* labels = in[1].i32();
  float* o = out.f32();
  const float scale = rows ? in[2].f32()[0] / static_cast<float>(rows) : 0.0f;
  for (int64_t r = 0; r < rows; ++r, x += cols, o += cols) {
    const int32_t l = label_at(n, labels, r, classes);
    float mx = x[0];
    for (int64_t c = 1; c < classes; ++c) mx = std::max(mx, x[c]);
    double sum = 0.0;
    for (int64_t c = 0; c < classes; ++c) {
      o[c] = std::exp(x[c] - mx);  // unnormalised softmax, scaled below
      sum += o[c];
    }
    const float k = static_cast<float>(scale / sum);
    for (int64_t c = 0; c < classes; ++c) o[c] *= k;
    for (int64_t c = classes; c < cols; ++c) o[c] = 0.0f;  // padding: not a class, no gradient
    o[l] -= scale;
  }
}

std::vector<int> grad_sce(GradContext& ctx, const Node& fwd, int dout) {
  if (!ctx.wants(0)) return {-1, -1};
  return {ctx.emit("SoftmaxCrossEntropyGrad", {fwd.inputs[0], fwd.inputs[1], dout}, fwd.attrs), -1};
}

TypeInfo infer_mse(const Node& n, const std::vector<const Node*>& in) {
  const Node& p = *in[0];
  const Node& t = *in[1];
  SF_ENFORCE(p.dtype == DType::kF32 && t.dtype == DType::kF32 && p.shape == t.shape, ShapeError,
             "{}: pred and target must be f32 of the same shape, got {}{} and {}{}", node_label(n),
             dtype_name(p.dtype), brief_shape(p.shape), dtype_name(t.dtype), brief_shape(t.shape));
  if (in.size() == 3)
    SF_ENFORCE(in[2]->dtype == DType::kF32 && numel(in[2]->shape) == 1, ShapeError,
               "{}: dout must be an f32 scalar, got {}{}", node_label(n), dtype_name(in[2]->dtype),
               brief_shape(in[2]->shape));
  return {in.size() == 3 ? p.shape : Shape{}, DType::kF32};
}

void forward_mse(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  const float* p = in[0].f32();
  const float* t = in[1].f32();
  const int64_t n = in[0].numel();
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(p[i]) - t[i];
    total += d * d;
  }
  out.f32()[0] = n ? static_cast<float>(total / static_cast<double>(n)) : 0.0f;
}

void forward_mse_grad(const Node&, const std::vector<Tensor>& in, Tensor& out) {
  const float* p = in[0].f32();
  const float* t = in[1].f32();
  float* o = out.f32();
  const int64_t n = out.numel();
  const float k = n ? 2.0f * in[2].f32()[0] / static_cast<float>(n) : 0.0f;
  for (int64_t i = 0; i < n; ++i) o[i] = k * (p[i] - t[i]);
}

std::vector<int> grad_mse(GradContext& ctx, const Node& fwd, int dout) {
  const int p = fwd.inputs[0], t = fwd.inputs[1];
  return {ctx.wants(0) ? ctx.emit("MSELossGrad", {p, t, dout}) : -1,
          ctx.wants(1) ? ctx.emit("MSELossGrad", {t, p, dout}) : -1};
}
}  // namespace

void register_loss_ops(OpRegistry& r) {
  r.add({.name = "SoftmaxCrossEntropy", .arity = 2, .infer = infer_sce, .forward = forward_sce, .grad = grad_sce});
  r.add({.name = "SoftmaxCrossEntropyGrad",
         .arity = 3,
         .infer = infer_sce_grad,
         .forward = forward_sce_grad,
         .grad = {}});
  r.add({.name = "MSELoss", .arity = 2, .infer = infer_mse, .forward = forward_mse, .grad = grad_mse});
  r.add({.name = "MSELossGrad", .arity = 3, .infer = infer_mse, .forward = forward_mse_grad, .grad = {}});
}

}  // namespace sf
