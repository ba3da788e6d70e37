// Batch normalisation over channel dim 1, f32, x (N, C, ...) of rank >= 2 ((N, C) or NCHW):
//
//   BatchNorm(x, gamma, beta, moving_mean, moving_var)  attrs training, epsilon (1e-5), momentum (0.9)
//     y = gamma * (x - mean) / sqrt(var + epsilon) + beta, per channel, where (mean, var) are
//     the batch's (over N and every dim after 1; var biased, divided by that count M) when
//     training, else the moving statistics. The op never writes the moving statistics (in
//     training it does not read them either): momentum is carried for BatchNormUpdateMoving.
//   BatchNormUpdateMoving(moving, x, control...)  attrs which ("mean" | "variance"), momentum,
//     num_control (0): in place, moving = momentum * moving + (1 - momentum) * batch statistic,
//     MindSpore's momentum convention (PyTorch's momentum is 1 - this). The variance is the
//     unbiased one (divided by M - 1), as MindSpore and PyTorch update it, while normalisation
//     uses the biased one; M must be > 1. Its output is `moving` itself (inplace_input 0), so
//     nothing reads it: a training program runs every in-place node of the forward graph.
//     Trailing control inputs only order it after other nodes (two updates of one moving tensor).
//
// Gradients (none for the moving statistics, which are treated as constants), with
// x^ = (x - mean) / sqrt(var + epsilon) and the statistics of the forward's mode:
//   dbeta  = BiasAddGrad(dout)                                       = sum dout
//   dgamma = BatchNormGammaGrad(dout, x, moving_mean, moving_var)     = sum dout * x^
//   dx     = BatchNormGrad(dout, x, gamma, moving_mean, moving_var, dgamma, dbeta)   training:
//              gamma / sqrt(var + eps) * (dout - dbeta / M - x^ * dgamma / M)
//          = BatchNormGrad(dout, x, gamma, moving_mean, moving_var)                  inference:
//              gamma / sqrt(moving_var + eps) * dout
// The gradient kernels recompute the batch statistics from x rather than keep them from the
// forward (a node has one output): two cheap passes next to the convolutions around them.
//
// Sums run per (n, c) row with 16 partial sums, so that they vectorise without -ffast-math,
// and are folded into double per channel.
#include <cmath>
#include <string>
#include <vector>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/lane_reduce.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// x viewed as (N, C, inner); each channel has count() = N * inner elements.
struct BnDims {
  int64_t n, c, inner;
  int64_t count() const { return n * inner; }
};

BnDims bn_dims(const Shape& s) {
  int64_t inner = 1;
  for (size_t i = 2; i < s.size(); ++i) inner *= s[i];
  return {s[0], s[1], inner};
}


// Per-channel mean and biased variance (two passes: no cancellation for large means).
void moments(const float* x, const BnDims& d, std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(d.c, 0.0);
  var.assign(d.c, 0.0);
  const double m = static_cast<double>(d.count());
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t c = 0; c < d.c; ++c) {
      const float* p = x + (i * d.c + c) * d.inner;
      mean[c] += lane_sum(d.inner, [p](int64_t k) { return p[k]; });
    }
  for (int64_t c = 0; c < d.c; ++c) mean[c] /= m;
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t c = 0; c < d.c; ++c) {
      const float* p = x + (i * d.c + c) * d.inner;
      const float mu = static_cast<float>(mean[c]);
      var[c] += lane_sum(d.inner, [p, mu](int64_t k) {
        const float v = p[k] - mu;
        return v * v;
      });
    }
  for (int64_t c = 0; c < d.c; ++c) var[c] /= m;
}

// The statistics a kernel normalises with: the batch's when training, else the moving ones
// (inputs `mean_in` and `mean_in + 1`). Returns mean and 1 / sqrt(var + epsilon) per channel.
struct Stats {
  std::vector<float> mean, inv_std;
};

Stats stats_of(const Node& n, const std::vector<Tensor>& in, const Tensor& x, size_t mean_in) {
  const BnDims d = bn_dims(x.shape());
  const double eps = n.attrs.get_float("epsilon", 1e-5);
  Stats s;
  s.mean.resize(d.c);
  s.inv_std.resize(d.c);
  if (n.attrs.get_bool("training")) {
    std::vector<double> mean, var;
    moments(x.f32(), d, mean, var);
    for (int64_t c = 0; c < d.c; ++c) {
      s.mean[c] = static_cast<float>(mean[c]);
      s.inv_std[c] = static_cast<float>(1.0 / std::sqrt(var[c] + eps));
    }
  } else {
    const float* mm = in[mean_in].f32();
    const float* mv = in[mean_in + 1].f32();
    for (int64_t c = 0; c < d.c; ++c) {
      s.mean[c] = mm[c];
      s.inv_std[c] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(mv[c]) + eps));
    }
  }
  return s;
}

// out = a[c] * p + b[c] * q + k[c] per element of channel c (q may be null for b = 0).
void per_channel_affine(const BnDims& d, const float* __restrict p, const float* __restrict q, const float* a,
                        const float* b, const float* k, float* __restrict out) {
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t c = 0; c < d.c; ++c) {
      const int64_t off = (i * d.c + c) * d.inner;
      const float ac = a[c], kc = k[c];
      if (q == nullptr) {
        for (int64_t j = 0; j < d.inner; ++j) out[off + j] = ac * p[off + j] + kc;
      } else {
        const float bc = b[c];
        for (int64_t j = 0; j < d.inner; ++j) out[off + j] = ac * p[off + j] + bc * q[off + j] + kc;
      }
    }
}

void check_channel_vector(const Node& n, const Node& v, int64_t c, const char* what) {
  SF_ENFORCE(v.dtype == DType::kF32 && v.shape == Shape{c}, ShapeError, "{}: {} must be f32 ({}), got {}{} ({})",
             node_label(n), what, c, dtype_name(v.dtype), brief_shape(v.shape), v.name);
}

void check_x(const Node& n, const Node& x) {
  SF_ENFORCE(x.dtype == DType::kF32 && x.shape.size() >= 2, ShapeError,
             "{}: x must be f32 of rank >= 2 (channels on dim 1), got {}{}", node_label(n), dtype_name(x.dtype),
             brief_shape(x.shape));
}

// ---- BatchNorm(x, gamma, beta, moving_mean, moving_var) ----

TypeInfo infer_bn(const Node& n, const std::vector<const Node*>& in) {
  check_x(n, *in[0]);
  const int64_t c = in[0]->shape[1];
  const char* names[] = {"gamma", "beta", "moving_mean", "moving_var"};
  for (int i = 1; i < 5; ++i) check_channel_vector(n, *in[i], c, names[i - 1]);
  SF_ENFORCE(n.attrs.get_float("epsilon", 1e-5) > 0.0, InvalidArgument, "{}: epsilon must be > 0", node_label(n));
  return {in[0]->shape, DType::kF32};
}

void forward_bn(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const BnDims d = bn_dims(in[0].shape());
  if (out.numel() == 0) return;
  const Stats s = stats_of(n, in, in[0], 3);
  const float* gamma = in[1].f32();
  const float* beta = in[2].f32();
  // y = scale * x + shift with scale = gamma * inv_std, shift = beta - mean * scale.
  std::vector<float> scale(d.c), shift(d.c);
  for (int64_t c = 0; c < d.c; ++c) {
    scale[c] = gamma[c] * s.inv_std[c];
    shift[c] = beta[c] - s.mean[c] * scale[c];
  }
  per_channel_affine(d, in[0].f32(), nullptr, scale.data(), nullptr, shift.data(), out.f32());
}

std::vector<int> grad_bn(GradContext& ctx, const Node& fwd, int dout) {
  const int x = fwd.inputs[0], gamma = fwd.inputs[1], mm = fwd.inputs[3], mv = fwd.inputs[4];
  const bool training = fwd.attrs.get_bool("training");
  const Attrs attrs{{"training", int64_t{training}}, {"epsilon", fwd.attrs.get_float("epsilon", 1e-5)}};
  const bool dx_needs_sums = training && ctx.wants(0);
  const int dbeta = ctx.wants(2) || dx_needs_sums ? ctx.emit("BiasAddGrad", {dout}) : -1;
  const int dgamma = ctx.wants(1) || dx_needs_sums ? ctx.emit("BatchNormGammaGrad", {dout, x, mm, mv}, attrs) : -1;
  int dx = -1;
  if (ctx.wants(0)) {
    std::vector<int> inputs{dout, x, gamma, mm, mv};
    if (training) inputs.insert(inputs.end(), {dgamma, dbeta});
    dx = ctx.emit("BatchNormGrad", std::move(inputs), attrs);
  }
  return {dx, dgamma, dbeta, -1, -1};
}

// ---- BatchNormGammaGrad(dout, x, moving_mean, moving_var) -> (C,) ----

TypeInfo infer_gamma_grad(const Node& n, const std::vector<const Node*>& in) {
  check_x(n, *in[1]);
  SF_ENFORCE(in[0]->dtype == DType::kF32 && in[0]->shape == in[1]->shape, ShapeError,
             "{}: dout must be f32 of x's shape {}, got {}{}", node_label(n), brief_shape(in[1]->shape),
             dtype_name(in[0]->dtype), brief_shape(in[0]->shape));
  const int64_t c = in[1]->shape[1];
  check_channel_vector(n, *in[2], c, "moving_mean");
  check_channel_vector(n, *in[3], c, "moving_var");
  return {{c}, DType::kF32};
}

void forward_gamma_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const BnDims d = bn_dims(in[1].shape());
  const Stats s = stats_of(n, in, in[1], 2);
  const float* g = in[0].f32();
  const float* x = in[1].f32();
  std::vector<double> acc(d.c, 0.0);
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t c = 0; c < d.c; ++c) {
      const int64_t off = (i * d.c + c) * d.inner;
      const float* gp = g + off;
      const float* xp = x + off;
      const float mu = s.mean[c];
      acc[c] += lane_sum(d.inner, [gp, xp, mu](int64_t k) { return gp[k] * (xp[k] - mu); });
    }
  float* o = out.f32();
  for (int64_t c = 0; c < d.c; ++c) o[c] = static_cast<float>(acc[c]) * s.inv_std[c];
}

// ---- BatchNormGrad(dout, x, gamma, moving_mean, moving_var[, dgamma, dbeta]) -> dx ----

TypeInfo infer_bn_grad(const Node& n, const std::vector<const Node*>& in) {
  const bool training = n.attrs.get_bool("training");
  const size_t want = training ? 7 : 5;
  SF_ENFORCE(in.size() == want, InvalidArgument,
             "{}: {} inputs, expected {} (dout, x, gamma, moving_mean, moving_var{}) for training={}", node_label(n),
             in.size(), want, training ? ", dgamma, dbeta" : "", training);
  check_x(n, *in[1]);
  SF_ENFORCE(in[0]->dtype == DType::kF32 && in[0]->shape == in[1]->shape, ShapeError,
             "{}: dout must be f32 of x's shape {}, got {}{}", node_label(n), brief_shape(in[1]->shape),
             dtype_name(in[0]->dtype), brief_shape(in[0]->shape));
  const int64_t c = in[1]->shape[1];
  const char* names[] = {"gamma", "moving_mean", "moving_var", "dgamma", "dbeta"};
  for (size_t i = 2; i < want; ++i) check_channel_vector(n, *in[i], c, names[i - 2]);
  return {in[1]->shape, DType::kF32};
}

void forward_bn_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const BnDims d = bn_dims(in[1].shape());
  if (out.numel() == 0) return;
  const Stats s = stats_of(n, in, in[1], 3);
  const float* gamma = in[2].f32();
  std::vector<float> a(d.c), b(d.c, 0.0f), k(d.c, 0.0f);
  if (!n.attrs.get_bool("training")) {
    for (int64_t c = 0; c < d.c; ++c) a[c] = gamma[c] * s.inv_std[c];
    per_channel_affine(d, in[0].f32(), nullptr, a.data(), nullptr, k.data(), out.f32());
    return;
  }
  // dx = a (dout - dbeta/M - x^ dgamma/M) with a = gamma inv_std and x^ = (x - mean) inv_std,
  //    = a dout + b x + k  with b = -a inv_std dgamma / M, k = a (inv_std dgamma mean - dbeta) / M.
  const float* dgamma = in[5].f32();
  const float* dbeta = in[6].f32();
  const double m = static_cast<double>(d.count());
  for (int64_t c = 0; c < d.c; ++c) {
    const double ac = static_cast<double>(gamma[c]) * s.inv_std[c];
    const double iv = s.inv_std[c];
    a[c] = static_cast<float>(ac);
    b[c] = static_cast<float>(-ac * iv * dgamma[c] / m);
    k[c] = static_cast<float>(ac * (iv * dgamma[c] * s.mean[c] - dbeta[c]) / m);
  }
  per_channel_affine(d, in[0].f32(), in[1].f32(), a.data(), b.data(), k.data(), out.f32());
}

// ---- BatchNormUpdateMoving(moving, x, control...) ----

bool updates_variance(const Node& n) {
  const std::string which = n.attrs.get_str("which", "mean");
  SF_ENFORCE(which == "mean" || which == "variance", InvalidArgument,
             "{}: attr which must be \"mean\" or \"variance\", got \"{}\"", node_label(n), which);
  return which == "variance";
}

TypeInfo infer_update(const Node& n, const std::vector<const Node*>& in) {
  const int64_t controls = n.attrs.get_int("num_control");
  SF_ENFORCE(in.size() == 2 + static_cast<size_t>(controls), InvalidArgument,
             "{}: {} inputs, expected moving, x plus num_control={}", node_label(n), in.size(), controls);
  SF_ENFORCE(in[0]->op == "Parameter", InvalidArgument, "{}: moving must be a Parameter, got {}", node_label(n),
             node_label(*in[0]));
  check_x(n, *in[1]);
  const BnDims d = bn_dims(in[1]->shape);
  check_channel_vector(n, *in[0], d.c, "moving");
  const double momentum = n.attrs.get_float("momentum", 0.9);
  SF_ENFORCE(momentum >= 0.0 && momentum <= 1.0, InvalidArgument, "{}: momentum must be in [0, 1], got {}",
             node_label(n), momentum);
  SF_ENFORCE(!updates_variance(n) || d.count() > 1, ShapeError,
             "{}: the unbiased variance needs more than 1 value per channel, x is {}", node_label(n),
             brief_shape(in[1]->shape));
  return {in[0]->shape, DType::kF32};
}

void forward_update(const Node& n, const std::vector<Tensor>& in, Tensor& moving) {
  const BnDims d = bn_dims(in[1].shape());
  const bool variance = updates_variance(n);
  const double momentum = n.attrs.get_float("momentum", 0.9);
  std::vector<double> mean, var;
  moments(in[1].f32(), d, mean, var);
  const double m = static_cast<double>(d.count());
  float* p = moving.f32();
  for (int64_t c = 0; c < d.c; ++c) {
    const double stat = variance ? var[c] * m / (m - 1.0) : mean[c];
    p[c] = static_cast<float>(momentum * p[c] + (1.0 - momentum) * stat);
  }
}

}  // namespace

void register_batch_norm_ops(OpRegistry& r) {
  r.add({.name = "BatchNorm", .arity = 5, .infer = infer_bn, .forward = forward_bn, .grad = grad_bn});
  r.add({.name = "BatchNormGrad", .arity = -1, .infer = infer_bn_grad, .forward = forward_bn_grad, .grad = {}});
  r.add({.name = "BatchNormGammaGrad", .arity = 4, .infer = infer_gamma_grad, .forward = forward_gamma_grad,
         .grad = {}});
  r.add({.name = "BatchNormUpdateMoving", .arity = -1, .infer = infer_update, .forward = forward_update, .grad = {},
         .inplace_input = 0});
}

}  // namespace sf
