// Serial references for the collective conformance tests: deterministic per-rank inputs whose
// reductions are exact in f32 (small integers, products of +-1 and +-2), so a reference
// computed on the test thread in any order must match every rank bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include <shardflow/comm/reduce_op.h>
#include <shardflow/core/tensor.h>

namespace sf::commtest {

// An integer in [lo, hi] from (rank, i, salt), the same on every call.
inline int32_t pick(int rank, int64_t i, uint64_t salt, int32_t lo, int32_t hi) {
  uint64_t h = (static_cast<uint64_t>(i) + 1) * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(rank) + 7) * 0xC2B2AE3D27D4EB4Full ^ salt;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return lo + static_cast<int32_t>(h % static_cast<uint64_t>(hi - lo + 1));
}

// Values whose `op` over up to 8 ranks is exact in f32.
inline int32_t value_for(comm::ReduceOp op, int rank, int64_t i, uint64_t salt) {
  if (op == comm::ReduceOp::kProd) {
    static constexpr int32_t kFactors[] = {-2, -1, 1, 2, 1, -1};
    return kFactors[pick(rank, i, salt, 0, 5)];
  }
  return pick(rank, i, salt, -1000, 1000);
}

inline Tensor make_input(const Shape& shape, DType dtype, comm::ReduceOp op, int rank, uint64_t salt) {
  Tensor t(shape, dtype);
  const int64_t n = t.numel();
  if (dtype == DType::kF32) {
    float* p = t.f32();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(value_for(op, rank, i, salt));
  } else {
    int32_t* p = t.i32();
    for (int64_t i = 0; i < n; ++i) p[i] = value_for(op, rank, i, salt);
  }
  return t;
}

// Element-wise reduction of inputs[0] op inputs[1] op ... (left to right).
inline Tensor reduce_all(const std::vector<Tensor>& inputs, comm::ReduceOp op) {
  Tensor acc = inputs[0].clone();
  for (size_t r = 1; r < inputs.size(); ++r)
    comm::reduce(op, acc.dtype(), acc.raw(), acc.raw(), inputs[r].raw(), acc.numel());
  return acc;
}

// Rows [begin, end) of dim 0 as a fresh tensor.
inline Tensor rows_copy(const Tensor& t, int64_t begin, int64_t end) { return t.rows(begin, end).clone(); }

// Concatenation along dim 0.
inline Tensor concat0(const std::vector<Tensor>& parts) {
  Shape s = parts[0].shape();
  s[0] = 0;
  for (const Tensor& p : parts) s[0] += p.dim(0);
  Tensor out(s, parts[0].dtype());
  int64_t row = 0;
  for (const Tensor& p : parts) {
    out.rows(row, row + p.dim(0)).copy_from(p);
    row += p.dim(0);
  }
  return out;
}

}  // namespace sf::commtest
