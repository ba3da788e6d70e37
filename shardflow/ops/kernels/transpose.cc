// Transpose (MindSpore ops.Transpose(x, perm)): out dim i is x's dim perm[i], so out's shape is
// (x.shape[perm[0]], ..., x.shape[perm[r-1]]); attr perm, a permutation of 0..r-1 (rank <= 8).
// Attention uses it to move heads in front of the sequence, (B, S, H, D) -> (B, H, S, D).
// Its gradient is the transpose of dout by the inverse permutation. Any dtype: f32 and i32 are
// both 4 bytes wide, so the kernel moves 32-bit words.
//
// The kernel walks the output row by row (contiguous writes) with x addressed through its
// strides permuted; when the last dim stays last the inner loop is a contiguous copy.
#include <array>
#include <cstdint>
#include <variant>
#include <vector>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/ops/kernels/register.h>
#include <shardflow/ops/kernels/row_walk.h>
#include <shardflow/ops/op_def.h>

namespace sf {

namespace {

// The perm attribute by reference, checked against x's rank.
const std::vector<int64_t>& perm_of(const Node& n, size_t rank) {
  static const std::vector<int64_t> kNone;
  const auto it = n.attrs.values().find("perm");
  const auto* perm = it == n.attrs.values().end() ? &kNone : std::get_if<std::vector<int64_t>>(&it->second);
  SF_ENFORCE(perm != nullptr, InvalidArgument, "{}: attribute 'perm' must be an int list", node_label(n));
  SF_ENFORCE(perm->size() == rank && rank <= kMaxRank, ShapeError,
             "{}: perm {} must list each of x's {} dims once (rank <= {})", node_label(n), brief_ints(*perm), rank,
             kMaxRank);
  std::array<bool, kMaxRank> seen{};
  for (int64_t p : *perm) {
    SF_ENFORCE(p >= 0 && p < static_cast<int64_t>(rank) && !seen[p], ShapeError,
               "{}: perm {} is not a permutation of 0..{} ({} out of range or repeated)", node_label(n),
               brief_ints(*perm), static_cast<int64_t>(rank) - 1, p);
    seen[p] = true;
  }
  return *perm;
}

TypeInfo infer_transpose(const Node& n, const std::vector<const Node*>& in) {
  const Shape& x = in[0]->shape;
  const std::vector<int64_t>& perm = perm_of(n, x.size());
  Shape out;
  for (int64_t p : perm) out.push_back(x[p]);
  return {out, in[0]->dtype};
}

void forward_transpose(const Node& n, const std::vector<Tensor>& in, Tensor& out) {
  const Shape& xs = in[0].shape();
  const size_t r = xs.size();
  const std::vector<int64_t>& perm = perm_of(n, r);
  const auto* x = static_cast<const uint32_t*>(in[0].raw());
  auto* o = static_cast<uint32_t*>(out.raw());
  if (out.numel() == 0) return;
  if (r == 0) {
    o[0] = x[0];
    return;
  }
  Strides x_strides{}, sx{}, so{};
  int64_t acc = 1;
  for (size_t d = r; d-- > 0;) {
    x_strides[d] = acc;
    acc *= xs[d];
  }
  acc = 1;
  for (size_t d = r; d-- > 0;) {
    so[d] = acc;
    acc *= out.shape()[d];
    sx[d] = x_strides[perm[d]];
  }
  const int64_t len = out.shape()[r - 1], step = sx[r - 1];
  if (step == 1) {
    for_each_row(out.shape(), sx, so, [&](int64_t ox, int64_t oo) {
      for (int64_t j = 0; j < len; ++j) o[oo + j] = x[ox + j];
    });
  } else {
    for_each_row(out.shape(), sx, so, [&](int64_t ox, int64_t oo) {
      for (int64_t j = 0; j < len; ++j) o[oo + j] = x[ox + j * step];
    });
  }
}

std::vector<int> grad_transpose(GradContext& ctx, const Node& fwd, int dout) {
  const std::vector<int64_t> perm = fwd.attrs.get_ints("perm");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return {ctx.emit("Transpose", {dout}, {{"perm", inverse}})};
}
}  // namespace

void register_transpose_ops(OpRegistry& r) {
  r.add({.name = "Transpose",
         .arity = 1,
         .infer = infer_transpose,
         .forward = forward_transpose,
         .grad = grad_transpose});
}

}  // namespace sf
