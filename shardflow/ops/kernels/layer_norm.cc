// Layer normalisation, the normalisation of transformer blocks (MindSpore ops.LayerNorm):
//
//   LayerNorm(x, gamma, beta)  attrs begin_norm_axis (-1), begin_params_axis (-1), epsilon (1e-5)
//     Each row of x, the elements of dims begin_norm_axis.. for one index of the dims before, is
//     normalised with its own mean and biased variance; gamma and beta, shaped as x's dims
//     begin_params_axis.., scale and shift it, broadcast over the dims before:
//       y = (x - mean) / sqrt(var + epsilon) * gamma + beta
//     With both axes -1 (the transformer's case) gamma and beta are the hidden dim's vectors.
//     Negative axes count from the end. The op has one output: MindSpore's LayerNorm also
//     returns mean and rstd for its gradient, and a node here has one output, so the gradient
//     kernels recompute the two statistics from x (two cheap passes per row).
//
// Gradients, with x^ = (x - mean) * rstd, rstd = 1 / sqrt(var + epsilon), g = dout * gamma:
//   dx     = LayerNormGrad(dout, x, gamma)  = rstd * (g - mean_row(g) - x^ * mean_row(g * x^))
//   dgamma = LayerNormGammaGrad(dout, x)    = sum of dout * x^ over the dims before begin_params_axis
//   dbeta  = SumToShape(dout, beta's shape) = sum of dout over the same dims
// (the same attrs as the forward). Under a split of the leading dims each rank's dgamma and
// dbeta are its rows' share of the sum, which the gradient's AllReduce over the parameter's
// replicas completes (train/semi_auto_step.h), as BiasAddGrad's does for a bias.
//
// Every kernel walks x as rows x d (d the row's size) and each row in chunks over which gamma
// is contiguous: gamma's period P = prod of x's dims begin_params_axis.. is a multiple or a
// divisor of d, so the chunk is min(d, P) and the inner loops are flat.
#include <cmath>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/lane_reduce.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// x viewed as `rows` rows of `d` elements; gamma and beta repeat every `period` elements.
struct LnDims {
  int64_t rows = 0, d = 1, period = 1;
  int norm_axis = 0, params_axis = 0;  // in [0, rank)
  int64_t chunk() const { return d < period ? d : period; }
  // Where gamma is read for the chunk starting at column c of row j.
  int64_t gamma_offset(int64_t j, int64_t c) const { return (j * d + c) % period; }
};

int axis_attr(const Node& n, const char* name, int64_t rank) {
  const int64_t a = n.attrs.get_int(name, -1);
  SF_ENFORCE(a >= -rank && a < rank, ShapeError, "{}: {} {} out of range for x of rank {}", node_label(n), name, a,
             rank);
  return static_cast<int>(a < 0 ? a + rank : a);
}

LnDims ln_dims(const Node& n, const Shape& x) {
  const int64_t r = static_cast<int64_t>(x.size());
  LnDims dims;
  dims.norm_axis = axis_attr(n, "begin_norm_axis", r);
  dims.params_axis = axis_attr(n, "begin_params_axis", r);
  for (int64_t i = dims.norm_axis; i < r; ++i) dims.d *= x[i];
  for (int64_t i = dims.params_axis; i < r; ++i) dims.period *= x[i];
  dims.rows = dims.d == 0 ? 0 : numel(x) / dims.d;
  return dims;
}

float epsilon_of(const Node& n) { return static_cast<float>(n.attrs.get_float("epsilon", 1e-5)); }

// Checks x, and the attrs; returns gamma's (and beta's) shape, x's dims begin_params_axis...
Shape check_x_and_attrs(const Node& n, const Node& x) {
  SF_ENFORCE(x.dtype == DType::kF32 && !x.shape.empty(), ShapeError, "{}: x must be f32 of rank >= 1, got {}{}",
             node_label(n), dtype_name(x.dtype), brief_shape(x.shape));
  const LnDims d = ln_dims(n, x.shape);
  SF_ENFORCE(n.attrs.get_float("epsilon", 1e-5) > 0.0, InvalidArgument, "{}: epsilon must be > 0, got {}",
             node_label(n), n.attrs.get_float("epsilon", 1e-5));
  return Shape(x.shape.begin() + d.params_axis, x.shape.end());
}

void check_like(const Node& n, const Node& v, const Shape& want, const char* what, const Node& x) {
  SF_ENFORCE(v.dtype == DType::kF32 && v.shape == want, ShapeError,
             "{}: {} must be f32 of shape {} (x {}'s dims from begin_params_axis on), got {}{}", node_label(n), what,
             brief_shape(want), brief_shape(x.shape), dtype_name(v.dtype), brief_shape(v.shape));
}

// Mean and rstd of one row, two passes (no cancellation for rows far from zero).
struct RowStats {
  float mean, rstd;
};

RowStats row_stats(const float* p, int64_t d, float eps) {
  const float mu = static_cast<float>(lane_sum(d, [p](int64_t k) { return p[k]; }) / static_cast<double>(d));
  auto squared_deviation = [p, mu](int64_t k) {
    const float v = p[k] - mu;
    return v * v;
  };
  const double var = lane_sum(d, squared_deviation) / static_cast<double>(d);
  return {mu, static_cast<float>(1.0 / std::sqrt(var + eps))};
}

// ---- LayerNorm(x, gamma, beta) ----

TypeInfo infer_ln(const Node& n, const std::vector<const Node*>& in) {
  const Shape params = check_x_and_attrs(n, *in[0]);
  check_like(n, *in[1], params, "gamma", *in[0]);
  check_like(n, *in[2], params, "beta", *in[0]);
  return {in[0]->shape, DType::kF32};
}

void forward_ln(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const LnDims dims = ln_dims(n, in[0].shape());
  const float eps = epsilon_of(n);
  const int64_t chunk = dims.chunk();
  const float* gamma = in[1].f32();
  const float* beta = in[2].f32();
  for (int64_t j = 0; j < dims.rows; ++j) {
    const float* __restrict x = in[0].f32() + j * dims.d;
    float* __restrict o = out.f32() + j * dims.d;
    const RowStats s = row_stats(x, dims.d, eps);
    for (int64_t c = 0; c < dims.d; c += chunk) {
      const float* g = gamma + dims.gamma_offset(j, c);
      const float* b = beta + dims.gamma_offset(j, c);
      for (int64_t k = 0; k < chunk; ++k) o[c + k] = (x[c + k] - s.mean) * s.rstd * g[k] + b[k];
    }
  }
}

std::vector<int> grad_ln(GradContext& ctx, const Node& fwd, int dout) {
  const int x = fwd.inputs[0], gamma = fwd.inputs[1], beta = fwd.inputs[2];
  const Attrs attrs{{"begin_norm_axis", fwd.attrs.get_int("begin_norm_axis", -1)},
                    {"begin_params_axis", fwd.attrs.get_int("begin_params_axis", -1)},
                    {"epsilon", fwd.attrs.get_float("epsilon", 1e-5)}};
  const int dx = ctx.wants(0) ? ctx.emit("LayerNormGrad", {dout, x, gamma}, attrs) : -1;
  const int dgamma = ctx.wants(1) ? ctx.emit("LayerNormGammaGrad", {dout, x}, attrs) : -1;
  // beta's shape is a suffix of dout's, so numpy's right-aligned sum-to-shape is exactly the
  // sum over the dims before begin_params_axis.
  const int dbeta = ctx.wants(2) ? ctx.emit("SumToShape", {dout}, {{"shape", ctx.node(beta).shape}}) : -1;
  return {dx, dgamma, dbeta};
}

// ---- LayerNormGrad(dout, x, gamma) -> dx ----

void check_dout(const Node& n, const Node& dout, const Node& x) {
  SF_ENFORCE(dout.dtype == DType::kF32 && dout.shape == x.shape, ShapeError,
             "{}: dout must be f32 of x's shape {}, got {}{}", node_label(n), brief_shape(x.shape),
             dtype_name(dout.dtype), brief_shape(dout.shape));
}

TypeInfo infer_ln_grad(const Node& n, const std::vector<const Node*>& in) {
  const Shape params = check_x_and_attrs(n, *in[1]);
  check_dout(n, *in[0], *in[1]);
  check_like(n, *in[2], params, "gamma", *in[1]);
  return {in[1]->shape, DType::kF32};
}

void forward_ln_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const LnDims dims = ln_dims(n, in[1].shape());
  const float eps = epsilon_of(n);
  const int64_t chunk = dims.chunk();
  const float* gamma = in[2].f32();
  const double inv_d = 1.0 / static_cast<double>(dims.d);
  for (int64_t j = 0; j < dims.rows; ++j) {
    const float* __restrict dy = in[0].f32() + j * dims.d;
    const float* __restrict x = in[1].f32() + j * dims.d;
    float* __restrict o = out.f32() + j * dims.d;
    const RowStats s = row_stats(x, dims.d, eps);
    const float mu = s.mean, rs = s.rstd;
    // mean_row(g) and mean_row(g * x^), g = dout * gamma, chunk by chunk.
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t c = 0; c < dims.d; c += chunk) {
      const float* gm = gamma + dims.gamma_offset(j, c);
      const float* dyc = dy + c;
      const float* xc = x + c;
      sum_g += lane_sum(chunk, [dyc, gm](int64_t k) { return dyc[k] * gm[k]; });
      sum_gx += lane_sum(chunk, [dyc, gm, xc, mu, rs](int64_t k) { return dyc[k] * gm[k] * ((xc[k] - mu) * rs); });
    }
    const float mean_g = static_cast<float>(sum_g * inv_d), mean_gx = static_cast<float>(sum_gx * inv_d);
    for (int64_t c = 0; c < dims.d; c += chunk) {
      const float* gm = gamma + dims.gamma_offset(j, c);
      for (int64_t k = 0; k < chunk; ++k) {
        const float xh = (x[c + k] - mu) * rs;
        o[c + k] = rs * (dy[c + k] * gm[k] - mean_g - xh * mean_gx);
      }
    }
  }
}

// ---- LayerNormGammaGrad(dout, x) -> gamma's shape ----

TypeInfo infer_gamma_grad(const Node& n, const std::vector<const Node*>& in) {
  const Shape params = check_x_and_attrs(n, *in[1]);
  check_dout(n, *in[0], *in[1]);
  return {params, DType::kF32};
}

void forward_gamma_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const LnDims dims = ln_dims(n, in[1].shape());
  const float eps = epsilon_of(n);
  const int64_t chunk = dims.chunk();
  float* acc = out.f32();
  out.zero();
  // Whole rows are accumulated into gamma's chunks, as BiasAddGrad does, so the inner loop
  // vectorises; each output element sums rows * d / P products.
  for (int64_t j = 0; j < dims.rows; ++j) {
    const float* __restrict dy = in[0].f32() + j * dims.d;
    const float* __restrict x = in[1].f32() + j * dims.d;
    const RowStats s = row_stats(x, dims.d, eps);
    for (int64_t c = 0; c < dims.d; c += chunk) {
      float* __restrict a = acc + dims.gamma_offset(j, c);
      for (int64_t k = 0; k < chunk; ++k) a[k] += dy[c + k] * ((x[c + k] - s.mean) * s.rstd);
    }
  }
}

}  // namespace

void register_layer_norm_ops(OpRegistry& r) {
  r.add({.name = "LayerNorm", .arity = 3, .infer = infer_ln, .forward = forward_ln, .grad = grad_ln});
  r.add({.name = "LayerNormGrad", .arity = 3, .infer = infer_ln_grad, .forward = forward_ln_grad, .grad = {}});
  r.add(
      {.name = "LayerNormGammaGrad", .arity = 2, .infer = infer_gamma_grad, .forward = forward_gamma_grad, .grad = {}});
}

}  // namespace sf
