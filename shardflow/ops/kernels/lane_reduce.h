// Row reductions that vectorise without -ffast-math, shared by the kernels that reduce along a
// contiguous row (LayerNorm, Softmax, BatchNorm and their gradients). A plain `s += f(i)` is a chain the
// compiler may not reorder under strict IEEE rules, so it stays scalar; kReduceLanes independent
// partial results are a reordering we make explicitly, and the compiler turns them into
// vector registers. Sums are folded into double at the end of each row.
#pragma once

#include <cstdint>

namespace sf {

constexpr int kReduceLanes = 16;

// The sum of f(i) for i < len, in kReduceLanes partial sums.
template <class F>
inline double lane_sum(int64_t len, F f) {
  float acc[kReduceLanes] = {};
  int64_t i = 0;
  for (; i + kReduceLanes <= len; i += kReduceLanes)
    for (int j = 0; j < kReduceLanes; ++j) acc[j] += f(i + j);
  double s = 0.0;
  for (; i < len; ++i) s += f(i);
  for (int j = 0; j < kReduceLanes; ++j) s += acc[j];
  return s;
}

// The largest of p[0..len), len >= 1, in kReduceLanes partial maxima.
inline float lane_max(const float* p, int64_t len) {
  float acc[kReduceLanes];
  for (int j = 0; j < kReduceLanes; ++j) acc[j] = p[0];
  int64_t i = 0;
  for (; i + kReduceLanes <= len; i += kReduceLanes)
    for (int j = 0; j < kReduceLanes; ++j) acc[j] = p[i + j] > acc[j] ? p[i + j] : acc[j];
  float m = p[0];
  for (; i < len; ++i) m = p[i] > m ? p[i] : m;
  for (int j = 0; j < kReduceLanes; ++j) m = acc[j] > m ? acc[j] : m;
  return m;
}

}  // namespace sf
