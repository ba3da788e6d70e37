#include "tests/ops/grad_check.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include <shardflow/core/rng.h>
#include <shardflow/ops/autodiff.h>
#include <shardflow/ops/executor.h>

namespace sf::optest {

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t(shape);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = lo + (hi - lo) * uniform_at(seed, 0, static_cast<uint64_t>(i));
  return t;
}

Tensor random_away_from_zero(const Shape& shape, uint64_t seed) {
  Tensor t = random_tensor(shape, seed, -0.8f, 0.8f);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] += p[i] < 0 ? -0.2f : 0.2f;
  return t;
}

Tensor iota(const Shape& shape) {
  Tensor t(shape);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(i);
  return t;
}

std::vector<Tensor> run_graph(const Graph& g, const std::vector<int>& fetches, const std::vector<Binding>& bindings) {
  Executor ex(g, fetches);
  for (const Binding& b : bindings) ex.bind(b.id, b.value);
  std::vector<Tensor> out;
  for (const Tensor& t : ex.run()) out.push_back(t.clone());
  return out;
}

namespace {
// "(1, 0, 2)": the multi-index of flat element i in shape s, for failure messages.
std::string index_str(const Shape& s, int64_t i) {
  Shape idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return shape_str(idx);
}
}  // namespace

::testing::AssertionResult check_gradients(Graph& g, int out, const std::vector<Binding>& bindings,
                                           const std::vector<int>& wrt, const GradCheckOptions& opt) {
  const Shape out_shape = g.node(out).shape;
  const int weight = g.add("Input", {}, {{"shape", out_shape}}, "GradCheck/weight");
  const int weighted = g.add("Mul", {out, weight}, {}, "GradCheck/weighted");
  const int loss = g.add("ReduceSum", {weighted}, {{"axis", std::vector<int64_t>{}}, {"keep_dims", int64_t{0}}},
                         "GradCheck/loss");
  const std::vector<int> grads = gradients(g, loss, wrt);

  std::vector<int> fetches = grads;
  Executor analytic(g, fetches), numeric(g, {loss});
  const Tensor w = random_tensor(out_shape, opt.seed, 0.5f, 1.5f);
  analytic.bind(weight, w);
  numeric.bind(weight, w);
  std::vector<Tensor> values;  // our copies: perturbing them is seen by both executors
  for (const Binding& b : bindings) {
    values.push_back(b.value.clone());
    analytic.bind(b.id, values.back());
    numeric.bind(b.id, values.back());
  }
  std::vector<Tensor> analytic_grads;
  for (const Tensor& t : analytic.run()) analytic_grads.push_back(t.clone());

  std::string failures;
  for (size_t k = 0; k < wrt.size(); ++k) {
    Tensor* v = nullptr;
    for (size_t b = 0; b < bindings.size(); ++b)
      if (bindings[b].id == wrt[k]) v = &values[b];
    if (v == nullptr) return ::testing::AssertionFailure() << "wrt node " << wrt[k] << " has no binding";
    const std::string& name = g.node(wrt[k]).name;
    const Tensor& ga = analytic_grads[k];
    if (ga.shape() != v->shape())
      return ::testing::AssertionFailure() << "gradient of " << name << " has shape " << shape_str(ga.shape())
                                           << ", the value has " << shape_str(v->shape());
    float* p = v->f32();
    for (int64_t i = 0; i < v->numel(); ++i) {
      const float orig = p[i];
      const float hi = orig + opt.eps, lo = orig - opt.eps;
      p[i] = hi;
      const double l_hi = numeric.run()[0].item();
      p[i] = lo;
      const double l_lo = numeric.run()[0].item();
      p[i] = orig;
      const double num = (l_hi - l_lo) / (static_cast<double>(hi) - lo);  // the step f32 really took
      const double ana = ga.f32()[i];
      const double tol = opt.atol + opt.rtol * std::max(std::fabs(num), std::fabs(ana));
      if (!(std::fabs(num - ana) <= tol)) {
        failures += fmt::format("\n  d loss / d {}{} (element {} of {}): analytic {:.6g}  numeric {:.6g}  (tol {:.3g})",
                                name, index_str(v->shape(), i), i, v->numel(), ana, num, tol);
        break;  // the first mismatch per input is the useful one
      }
    }
  }
  if (!failures.empty()) return ::testing::AssertionFailure() << "gradient mismatch:" << failures;
  return ::testing::AssertionSuccess();
}

}  // namespace sf::optest
