// Test support for the op kernels: deterministic random tensors, running a graph once, and a
// finite-difference gradient checker.
//
// check_gradients appends loss = ReduceSum(out * W) to the graph, with W a fixed random tensor
// so that every output element weighs differently and a gradient that is merely proportional
// to the right one still fails. It compares each analytic gradient from gradients() with the
// central difference (L(v + eps) - L(v - eps)) / 2eps of that loss, element by element.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <shardflow/core/tensor.h>
#include <shardflow/ops/graph.h>

namespace sf::optest {

// A source node (Input or Parameter) and the value it is bound to.
struct Binding {
  int id;
  Tensor value;
};

struct GradCheckOptions {
  float eps = 1e-3f;
  double rtol = 1e-2;  // relative to the larger of the two gradients
  double atol = 2e-3;  // floor for gradients near zero, where f32 rounding dominates
  uint64_t seed = 17;  // of the weight tensor W
};

// f32 tensor of uniform values in [lo, hi), the same for the same seed.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
// f32 tensor whose values are at least 0.2 away from zero (for ops with a kink at 0).
Tensor random_away_from_zero(const Shape& shape, uint64_t seed);
// f32 tensor of the given values (a braced list alone is ambiguous with the i32 overload).
inline Tensor floats(const Shape& shape, const std::vector<float>& values) { return Tensor::from_vector(shape, values); }
// f32 tensor 0, 1, 2, ... in row-major order.
Tensor iota(const Shape& shape);

// Runs the graph once with the bindings and returns deep copies of the fetched values.
std::vector<Tensor> run_graph(const Graph& g, const std::vector<int>& fetches, const std::vector<Binding>& bindings);

// Checks d loss / d w for every w in `wrt` (each must be one of the bindings). `bindings` must
// bind every source `out` depends on; the tensors are copied, so the caller's stay unchanged.
// On failure, names the first mismatching element of each wrt with both values side by side.
::testing::AssertionResult check_gradients(Graph& g, int out, const std::vector<Binding>& bindings,
                                           const std::vector<int>& wrt, const GradCheckOptions& opt = {});

}  // namespace sf::optest
