// Dropout and the causal mask of attention, written so that a block of a split tensor computes
// exactly the same block of the 1-device result:
//
//   Dropout(x f32, seeds i32 (n,))  attrs p (0.1), salt, batch_axis (0), offsets, global_shape
//     seeds[i] is the seed of x's slice i along batch_axis (one sample); salt tells dropout
//     sites apart (GraphBuilder::dropout hashes the node's name, the same on every rank; a node
//     without it uses that hash too). Element e is kept iff u(seed of its sample, salt, g) >= p,
//     g being e's global row-major index over the non-batch dims of global_shape (x's shape by
//     default), from this block's offsets (zeros by default); y = x * keep / (1 - p).
//     The mask is a function of (sample seed, site, global position) only: 1 device, any split
//     of any dim (the sharding rule sets offsets and global_shape) and any pipeline micro-batch
//     (which carries its samples' seeds) draw the same mask. p = 0 is the identity.
//     Gradient: dx = Dropout(dout, seeds) with the same attrs, the same mask and scale; the
//     seeds, integers, get none.
//   CausalMask(scores f32 (..., q, k))  attrs fill (-1e9), q_offset (0), k_offset (0)
//     Entry (qi, ki) becomes fill where k_offset + ki > q_offset + qi (a key after the query),
//     else is unchanged; the offsets are the global positions of this block's first query row
//     and key column. Gradient: CausalMask(dout) with fill 0 and the same offsets.
//
// u is a counter-based hash rather than a generator's stream, so no element depends on how
// many were drawn before it: splitmix64's output number g + 1 from a key that mixes the sample
// seed with the salt, its top 53 bits as a double in [0, 1). The comparison with p is in
// double, exact on every rank alike.
//
// Why fill = -1e9 and not -inf: every global row keeps its diagonal, so the row max m of the
// softmax after the mask is a real score, and exp(-1e9 - m) underflows to exactly 0 in f32
// (anything below m - 104 does): the masked weights are exact zeros and the row sums stay
// finite, as with -inf. A finite fill also survives the arithmetic that may sit between the
// mask and the softmax or that sees a block of it: a scale by 1/sqrt(d), a sum, 0 * fill = 0
// in a gradient, a block whose rows are all masked under a split of the key dim; -inf turns
// the first two into -inf and the last two into NaN.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/rng.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// ---- Dropout ----

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // splitmix64's increment

// splitmix64's finaliser: a bijection of 64-bit words in which every input bit flips about
// half of the output bits, so neighbouring counters give unrelated values.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The key of one sample at one site. The seed is mixed before the salt is folded in, so
// seeds s and s ^ 1 at one site are as unrelated as two sites.
uint64_t sample_key(int32_t seed, uint64_t salt) {
  return mix64(mix64(static_cast<uint64_t>(static_cast<uint32_t>(seed)) + kGolden) ^ salt);
}

// u in [0, 1) of the element at within-sample index g: splitmix64's (g + 1)-th output.
double unit(uint64_t key, uint64_t g) {
  return static_cast<double>(mix64(key + (g + 1) * kGolden) >> 11) * 0x1.0p-53;
}

// Dropout's attrs, checked against x's (local) shape.
struct DropoutAttrs {
  double p = 0.1;
  uint64_t salt = 0;
  int batch_axis = 0;             // in [0, rank)
  std::vector<int64_t> offsets;   // per dim: where this block starts
  std::vector<int64_t> global;    // the whole tensor's shape
};

DropoutAttrs dropout_attrs(const Node& n, const Shape& x) {
  const int64_t r = static_cast<int64_t>(x.size());
  DropoutAttrs a;
  a.p = n.attrs.get_float("p", 0.1);
  SF_ENFORCE(a.p >= 0.0 && a.p < 1.0, InvalidArgument, "{}: p must lie in [0, 1), got {}", node_label(n), a.p);
  // No salt attr: the node's name hashed as GraphBuilder::dropout hashes it.
  a.salt = n.attrs.has("salt") ? static_cast<uint64_t>(n.attrs.get_int("salt")) : stream_of(n.name);
  const int64_t b = n.attrs.get_int("batch_axis", 0);
  SF_ENFORCE(b >= -r && b < r, ShapeError, "{}: batch_axis {} out of range for x {}", node_label(n), b,
             brief_shape(x));
  a.batch_axis = static_cast<int>(b < 0 ? b + r : b);
  a.offsets = n.attrs.get_ints("offsets", std::vector<int64_t>(x.size(), 0));
  a.global = n.attrs.get_ints("global_shape", x);
  SF_ENFORCE(a.offsets.size() == x.size() && a.global.size() == x.size(), ShapeError,
             "{}: offsets {} and global_shape {} must have one entry per dim of x {}", node_label(n),
             brief_ints(a.offsets), brief_shape(a.global), brief_shape(x));
  for (size_t d = 0; d < x.size(); ++d)
    SF_ENFORCE(a.offsets[d] >= 0 && a.offsets[d] + x[d] <= a.global[d], ShapeError,
               "{}: the block of shape {} at offsets {} must lie within global_shape {} (dim {})", node_label(n),
               brief_shape(x), brief_ints(a.offsets), brief_shape(a.global), d);
  return a;
}

TypeInfo infer_dropout(const Node& n, const std::vector<const Node*>& in) {
  const Node& x = *in[0];
  const Node& seeds = *in[1];
  SF_ENFORCE(x.dtype == DType::kF32 && !x.shape.empty(), ShapeError, "{}: x must be f32 of rank >= 1, got {}{}",
             node_label(n), dtype_name(x.dtype), brief_shape(x.shape));
  const DropoutAttrs a = dropout_attrs(n, x.shape);
  const int64_t samples = x.shape[a.batch_axis];
  SF_ENFORCE(seeds.dtype == DType::kI32 && seeds.shape == Shape{samples}, ShapeError,
             "{}: seeds must be i32 ({},), one per slice of x {} along batch_axis {}, got {}{}", node_label(n),
             samples, brief_shape(x.shape), a.batch_axis, dtype_name(seeds.dtype), brief_shape(seeds.shape));
  return {x.shape, DType::kF32};
}

void forward_dropout(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const Shape& s = in[0].shape();
  const DropoutAttrs a = dropout_attrs(n, s);
  const int64_t count = out.numel();
  if (count == 0) return;
  const float* x = in[0].f32();
  float* y = out.f32();
  if (a.p == 0.0) {
    std::memcpy(y, x, static_cast<size_t>(count) * sizeof(float));
    return;
  }
  const float scale = static_cast<float>(1.0 / (1.0 - a.p));
  const int r = static_cast<int>(s.size()), last = r - 1, b = a.batch_axis;
  // Row-major strides of the global non-batch dims: the index within a sample. The batch dim
  // has none, its position picks the sample's key instead.
  std::vector<int64_t> gstride(r, 0);
  int64_t stride = 1;
  for (int d = last; d >= 0; --d)
    if (d != b) {
      gstride[d] = stride;
      stride *= a.global[d];
    }
  std::vector<uint64_t> keys(static_cast<size_t>(s[b]));
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = sample_key(in[1].i32()[i], a.salt);
  // Row by row along the last dim; idx is the local index of the row's first element.
  const int64_t row = s[last];
  std::vector<int64_t> idx(r, 0);
  for (int64_t start = 0; start < count; start += row) {
    int64_t base = a.offsets[last] * gstride[last];
    for (int d = 0; d < last; ++d) base += (idx[d] + a.offsets[d]) * gstride[d];
    const float* __restrict xr = x + start;
    float* __restrict yr = y + start;
    for (int64_t k = 0; k < row; ++k) {
      const uint64_t key = keys[static_cast<size_t>(b == last ? k : idx[b])];
      const bool keep = unit(key, static_cast<uint64_t>(base + k * gstride[last])) >= a.p;
      yr[k] = keep ? xr[k] * scale : 0.0f;
    }
    for (int d = last - 1; d >= 0; --d) {  // odometer over the dims before the last
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

std::vector<int> grad_dropout(GradContext& ctx, const Node& fwd, int dout) {
  if (!ctx.wants(0)) return {-1, -1};
  // The forward's salt made explicit: the gradient node's own name would hash to another.
  Attrs attrs = fwd.attrs;
  if (!attrs.has("salt")) attrs.set("salt", static_cast<int64_t>(stream_of(fwd.name)));
  return {ctx.emit("Dropout", {dout, fwd.inputs[1]}, std::move(attrs)), -1};
}

// ---- CausalMask ----

struct MaskAttrs {
  float fill = -1e9f;
  int64_t q_offset = 0, k_offset = 0;
};

MaskAttrs mask_attrs(const Node& n) {
  MaskAttrs a;
  const double fill = n.attrs.get_float("fill", -1e9);
  SF_ENFORCE(!std::isnan(fill), InvalidArgument, "{}: fill must not be NaN", node_label(n));
  a.fill = static_cast<float>(fill);
  a.q_offset = n.attrs.get_int("q_offset", 0);
  a.k_offset = n.attrs.get_int("k_offset", 0);
  SF_ENFORCE(a.q_offset >= 0 && a.k_offset >= 0, InvalidArgument, "{}: q_offset {} and k_offset {} must be >= 0",
             node_label(n), a.q_offset, a.k_offset);
  return a;
}

TypeInfo infer_causal_mask(const Node& n, const std::vector<const Node*>& in) {
  const Node& s = *in[0];
  SF_ENFORCE(s.dtype == DType::kF32 && s.shape.size() >= 2, ShapeError,
             "{}: scores must be f32 (..., q, k) of rank >= 2, got {}{}", node_label(n), dtype_name(s.dtype),
             brief_shape(s.shape));
  mask_attrs(n);
  return {s.shape, DType::kF32};
}

void forward_causal_mask(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const MaskAttrs a = mask_attrs(n);
  const Shape& s = in[0].shape();
  const int64_t q = s[s.size() - 2], k = s.back();
  const int64_t rows = k == 0 ? 0 : out.numel() / k;
  const float* x = in[0].f32();
  float* y = out.f32();
  for (int64_t j = 0; j < rows; ++j) {
    // Global key columns up to the row's global query position stay: local ki < visible.
    const int64_t visible = std::clamp<int64_t>(a.q_offset + j % q - a.k_offset + 1, 0, k);
    const float* __restrict xr = x + j * k;
    float* __restrict yr = y + j * k;
    for (int64_t c = 0; c < visible; ++c) yr[c] = xr[c];
    for (int64_t c = visible; c < k; ++c) yr[c] = a.fill;
  }
}

std::vector<int> grad_causal_mask(GradContext& ctx, const Node& fwd, int dout) {
  Attrs attrs = fwd.attrs;
  attrs.set("fill", 0.0);  // a masked entry does not depend on the input
  return {ctx.emit("CausalMask", {dout}, std::move(attrs))};
}
}  // namespace

void register_dropout_ops(OpRegistry& r) {
  r.add({.name = "Dropout", .arity = 2, .infer = infer_dropout, .forward = forward_dropout, .grad = grad_dropout});
  r.add({.name = "CausalMask",
         .arity = 1,
         .infer = infer_causal_mask,
         .forward = forward_causal_mask,
         .grad = grad_causal_mask});
}

}  // namespace sf
