// GeLU, the activation of GPT-style feed-forward blocks (MindSpore ops.GeLU, PyTorch gelu):
//
//   GeLU(x)  attr approximate = "tanh" (the default, MindSpore's and GPT-2's formula) or "none"
//     tanh:  y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
//     none:  y = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))          (the exact one)
//   GeLUGrad(dout, x)  the same attr: dx = dout * y'(x)
//     tanh:  y' = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2),  t = tanh(u)
//     none:  y' = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
// The gradient takes x rather than y: y' cannot be recovered from y alone (GeLU is not
// monotonic below about -0.75), and x is alive anyway as the forward's input.
//
// Both are flat loops over contiguous memory, computed in float like the rest of the step. The
// tanh is tanh_f32 below rather than glibc's tanhf: tanhf is a scalar call per element (through
// expm1f) that cost 5x the GeLU's own arithmetic and a third of a GPT step's time; tanh_f32 is
// branch-free arithmetic the compiler vectorises, and GeLU with it stays within a few float ulps
// of GeLU with tanhf (tested). The exact form keeps erff (one call; it is not the transformer's
// default).
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kCubic = 0.044715f;
constexpr float kInvSqrt2 = 0.7071067811865476f;    // 1 / sqrt(2)
constexpr float kInvSqrt2Pi = 0.3989422804014327f;  // 1 / sqrt(2 pi)

// e^x for x in [0, 40], branch-free: x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor
// polynomial to degree 7 (truncation below 6e-9 relative), 2^n put in the exponent bits. ln2 is
// split in two (a high part exact in few bits) so that n ln2 loses nothing for n <= 58.
inline float exp_small_range(float x) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding and subtracting it rounds to an integer
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  const float p =
      1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720 + r / 5040))))));
  return p * std::bit_cast<float>(static_cast<int32_t>((static_cast<int32_t>(n) + 127) << 23));
}

// tanh(u) in float as 1 - 2 / (e^{2|u|} + 1) with the sign put back, |u| capped at 20 where
// tanh is 1 in float. Near 0 this loses tanh's relative precision (the difference cancels), but
// not its absolute precision (within 2 ulps of 1), and GeLU only ever uses 1 + t and 1 - t^2,
// where that is all that counts. This file is compiled with -fno-trapping-math
// (shardflow/ops/CMakeLists.txt): without it GCC keeps the cap's select as a branch (the
// division after it could raise a floating-point exception, which nothing here reads), and the
// loop does not vectorise.
inline float tanh_f32(float u) {
  const float a = std::fabs(u);
  const float e = exp_small_range(2.0f * (a < 20.0f ? a : 20.0f));
  return std::copysign(1.0f - 2.0f / (e + 1.0f), u);
}

// True for "tanh" (or no attribute), false for "none"; anything else is refused, naming the node.
bool uses_tanh(const Node& n) {
  const std::string a = n.attrs.get_str("approximate", "tanh");
  SF_ENFORCE(a == "tanh" || a == "none", InvalidArgument,
             "{}: attr approximate must be \"tanh\" or \"none\", got \"{}\"", node_label(n), brief_text(a, 40));
  return a == "tanh";
}

TypeInfo infer_gelu(const Node& n, const std::vector<const Node*>& in) {
  uses_tanh(n);
  SF_ENFORCE(in[0]->dtype == DType::kF32, ShapeError, "{}: input must be f32, got {}{}", node_label(n),
             dtype_name(in[0]->dtype), brief_shape(in[0]->shape));
  return {in[0]->shape, DType::kF32};
}

void forward_gelu(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const float* __restrict x = in[0].f32();
  float* __restrict o = out.f32();
  const int64_t len = out.numel();
  if (uses_tanh(n)) {
    for (int64_t i = 0; i < len; ++i) {
      const float v = x[i];
      o[i] = 0.5f * v * (1.0f + tanh_f32(kSqrt2OverPi * (v + kCubic * v * v * v)));
    }
  } else {
    for (int64_t i = 0; i < len; ++i) {
      const float v = x[i];
      o[i] = 0.5f * v * (1.0f + std::erf(v * kInvSqrt2));
    }
  }
}

TypeInfo infer_gelu_grad(const Node& n, const std::vector<const Node*>& in) {
  uses_tanh(n);
  const Node& dout = *in[0];
  const Node& x = *in[1];
  SF_ENFORCE(dout.dtype == DType::kF32 && x.dtype == DType::kF32 && dout.shape == x.shape, ShapeError,
             "{}: dout and x must be f32 of the same shape, got {}{} and {}{}", node_label(n), dtype_name(dout.dtype),
             brief_shape(dout.shape), dtype_name(x.dtype), brief_shape(x.shape));
  return {x.shape, DType::kF32};
}

void forward_gelu_grad(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const float* __restrict g = in[0].f32();
  const float* __restrict x = in[1].f32();
  float* __restrict o = out.f32();
  const int64_t len = out.numel();
  if (uses_tanh(n)) {
    for (int64_t i = 0; i < len; ++i) {
      const float v = x[i];
      const float t = tanh_f32(kSqrt2OverPi * (v + kCubic * v * v * v));
      const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
      o[i] = g[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    }
  } else {
    for (int64_t i = 0; i < len; ++i) {
      const float v = x[i];
      const float cdf = 0.5f * (1.0f + std::erf(v * kInvSqrt2));
      o[i] = g[i] * (cdf + v * kInvSqrt2Pi * std::exp(-0.5f * v * v));
    }
  }
}

std::vector<int> grad_gelu(GradContext& ctx, const Node& fwd, int dout) {
  return {ctx.emit("GeLUGrad", {dout, fwd.inputs[0]}, {{"approximate", fwd.attrs.get_str("approximate", "tanh")}})};
}
}  // namespace

void register_gelu_ops(OpRegistry& r) {
  r.add({.name = "GeLU", .arity = 1, .infer = infer_gelu, .forward = forward_gelu, .grad = grad_gelu});
  r.add({.name = "GeLUGrad", .arity = 2, .infer = infer_gelu_grad, .forward = forward_gelu_grad, .grad = {}});
}

}  // namespace sf
