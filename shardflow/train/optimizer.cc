#include <shardflow/train/optimizer.h>

#include <cmath>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>
#include <shardflow/core/fault_point.h>

namespace sf::nn {

Optimizer::Optimizer(ParameterList params, float lr) : params_(std::move(params)), lr_(lr) {
  SF_ENFORCE(lr > 0 && std::isfinite(lr), InvalidArgument, "optimizer: learning rate must be positive, got {}", lr);
}

void Optimizer::step(const std::vector<Tensor>& grads) {
  SF_ENFORCE(grads.size() == params_.size(), InvalidArgument, "optimizer: {} gradients for {} parameters",
             grads.size(), params_.size());
  for (size_t i = 0; i < grads.size(); ++i)
    SF_ENFORCE(grads[i].shape() == params_[i].value().shape(), ShapeError,
               "optimizer: gradient {} for parameter '{}' of shape {}", grads[i].describe(), params_[i].name(),
               brief_shape(params_[i].value().shape()));
  // Clipping comes before the step is counted: a failed collective leaves the optimizer as it was.
  const std::vector<Tensor>* use = &grads;
  if (max_grad_norm_) {
    const double norm = global_grad_norm(grads, placement_);
    last_grad_norm_ = norm;
    const double scale = clip_scale(norm, *max_grad_norm_);
    if (scale != 1) {
      // Copies: the caller's gradients may be the runtime's fetched registers or a test's values.
      clipped_.resize(grads.size());
      const auto s = static_cast<float>(scale);
      for (size_t i = 0; i < grads.size(); ++i) {
        if (!clipped_[i].defined() || clipped_[i].shape() != grads[i].shape())
          clipped_[i] = Tensor::empty(grads[i].shape());
        const float* g = grads[i].f32();
        float* c = clipped_[i].f32();
        for (int64_t k = 0; k < grads[i].numel(); ++k) c[k] = g[k] * s;
      }
      use = &clipped_;
    }
  }
  ++global_step_;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (i == grads.size() / 2) fault_point("optimizer");  // a rank dying with half its parameters updated
    update(i, params_[i].value(), (*use)[i]);
  }
}

void Optimizer::set_max_grad_norm(std::optional<float> max_norm) {
  SF_ENFORCE(!max_norm || (*max_norm > 0 && std::isfinite(*max_norm)), InvalidArgument,
             "optimizer: max_grad_norm must be positive and finite, got {}", max_norm.value_or(0.0f));
  max_grad_norm_ = max_norm;
}

void Optimizer::set_grad_placement(GradPlacement placement) {
  SF_ENFORCE(placement.counted.empty() || placement.counted.size() == params_.size(), InvalidArgument,
             "optimizer: the gradient placement lists {} gradients for {} parameters", placement.counted.size(),
             params_.size());
  placement_ = std::move(placement);
}

std::map<std::string, double> Optimizer::hyper_parameters() const {
  // max_grad_norm only when set: states saved before clipping existed (or without it) still
  // match an optimizer without it, and a resume that would clip differently is refused.
  std::map<std::string, double> out{{"learning_rate", lr_}};
  if (max_grad_norm_) out["max_grad_norm"] = *max_grad_norm_;
  return out;
}

SGD::SGD(ParameterList params, float lr, float momentum, float weight_decay)
    : Optimizer(std::move(params), lr), momentum_(momentum), weight_decay_(weight_decay) {
  SF_ENFORCE(momentum >= 0 && weight_decay >= 0, InvalidArgument,
             "SGD: momentum ({}) and weight_decay ({}) must be >= 0", momentum, weight_decay);
  if (momentum_ > 0)
    for (auto& p : params_) moments_.push_back(Tensor(p.shape()));
}

void SGD::update(size_t i, Tensor& param, const Tensor& grad) {
  float* p = param.f32();
  const float* g = grad.f32();
  const int64_t n = param.numel();
  const float lr = lr_, wd = weight_decay_;
  if (momentum_ == 0) {
    for (int64_t k = 0; k < n; ++k) p[k] -= lr * (g[k] + wd * p[k]);
    return;
  }
  fit_state(i);
  float* v = moments_[i].f32();
  const float mu = momentum_;
  for (int64_t k = 0; k < n; ++k) {
    v[k] = mu * v[k] + (g[k] + wd * p[k]);
    p[k] -= lr * v[k];
  }
}

// A parameter sharded (semi-auto parallel) after this optimizer was made holds a block: its
// state, zero until the first step, takes the block's shape.
void SGD::fit_state(size_t i) {
  const Shape& shape = params_[i].value().shape();
  if (moments_[i].shape() != shape) moments_[i] = Tensor(shape);
}

std::vector<std::pair<std::string, Tensor>> SGD::state() {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < moments_.size(); ++i) fit_state(i);
  for (size_t i = 0; i < moments_.size(); ++i) out.emplace_back("moments." + params_[i].name(), moments_[i]);
  return out;
}

std::map<std::string, double> SGD::hyper_parameters() const {
  std::map<std::string, double> out = Optimizer::hyper_parameters();
  out.insert({{"momentum", momentum_}, {"weight_decay", weight_decay_}});
  return out;
}

Momentum::Momentum(ParameterList params, float lr, float momentum) : SGD(std::move(params), lr, momentum) {
  SF_ENFORCE(momentum > 0, InvalidArgument, "Momentum: momentum must be > 0, got {}", momentum);
}

Adam::Adam(ParameterList params, float lr, float beta1, float beta2, float eps)
    : Adam("Adam", std::move(params), lr, beta1, beta2, eps) {}

Adam::Adam(const char* who, ParameterList params, float lr, float beta1, float beta2, float eps)
    : Optimizer(std::move(params), lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  SF_ENFORCE(beta1 >= 0 && beta1 < 1, InvalidArgument, "{}: beta1 must be in [0, 1), got {}", who, beta1);
  SF_ENFORCE(beta2 >= 0 && beta2 < 1, InvalidArgument, "{}: beta2 must be in [0, 1), got {}", who, beta2);
  for (auto& p : params_) {
    m_.push_back(Tensor(p.shape()));
    v_.push_back(Tensor(p.shape()));
  }
}

void Adam::update(size_t i, Tensor& param, const Tensor& grad) {
  float* p = param.f32();
  const float* g = grad.f32();
  fit_state(i);
  float* m = m_[i].f32();
  float* v = v_[i].f32();
  const double t = static_cast<double>(global_step_);
  const float alpha = static_cast<float>(lr_ * std::sqrt(1 - std::pow(beta2_, t)) / (1 - std::pow(beta1_, t)));
  for (int64_t k = 0; k < param.numel(); ++k) {
    m[k] = beta1_ * m[k] + (1 - beta1_) * g[k];
    v[k] = beta2_ * v[k] + (1 - beta2_) * g[k] * g[k];
    p[k] -= alpha * m[k] / (std::sqrt(v[k]) + eps_);
  }
}

// As SGD::fit_state: a parameter cut to its block after construction.
void Adam::fit_state(size_t i) {
  const Shape& shape = params_[i].value().shape();
  if (m_[i].shape() != shape) {
    m_[i] = Tensor(shape);
    v_[i] = Tensor(shape);
  }
}

std::vector<std::pair<std::string, Tensor>> Adam::state() {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) fit_state(i);
  for (size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back("moment1." + params_[i].name(), m_[i]);
    out.emplace_back("moment2." + params_[i].name(), v_[i]);
  }
  return out;
}

std::map<std::string, double> Adam::hyper_parameters() const {
  std::map<std::string, double> out = Optimizer::hyper_parameters();
  out.insert({{"beta1", beta1_}, {"beta2", beta2_}, {"eps", eps_}});
  return out;
}

bool decay_except_vectors(const Parameter& p) { return p.shape().size() >= 2; }

AdamW::AdamW(ParameterList params, float lr, float beta1, float beta2, float eps, float weight_decay,
             const DecayFilter& decay)
    : Adam("AdamW", std::move(params), lr, beta1, beta2, eps), weight_decay_(weight_decay) {
  SF_ENFORCE(eps >= 0 && std::isfinite(eps), InvalidArgument, "AdamW: eps must be >= 0 and finite, got {}", eps);
  SF_ENFORCE(weight_decay >= 0 && std::isfinite(weight_decay), InvalidArgument,
             "AdamW: weight_decay must be >= 0 and finite, got {}", weight_decay);
  for (const Parameter& p : params_) decays_.push_back(!decay || decay(p));
}

// PyTorch's single-tensor AdamW step (torch/optim/adamw.py, amsgrad off): the decay first, on
// the parameter before this step's update, then Adam with eps added to the bias-corrected root.
void AdamW::update(size_t i, Tensor& param, const Tensor& grad) {
  float* p = param.f32();
  const float* g = grad.f32();
  fit_state(i);
  float* m = m_[i].f32();
  float* v = v_[i].f32();
  const double t = static_cast<double>(global_step_);
  const auto step_size = static_cast<float>(lr_ / (1 - std::pow(beta1_, t)));
  const auto root_correction = static_cast<float>(std::sqrt(1 - std::pow(beta2_, t)));
  // 1 - lr * wd in double, rounded once, as PyTorch's param.mul_(1 - lr * weight_decay).
  const auto keep = static_cast<float>(1.0 - static_cast<double>(lr_) * weight_decay_);
  // A factor of 1 leaves p as it is (x * 1 is exact), so one loop serves both cases.
  const float factor = decays_[i] && weight_decay_ > 0 ? keep : 1.0f;
  const float b1 = beta1_, b2 = beta2_, eps = eps_;
  // The loop vectorises: optimizer.cc is compiled with -fno-math-errno (train/CMakeLists.txt),
  // so the square root (of v >= 0, which never sets errno anyway) is one instruction.
  for (int64_t k = 0; k < param.numel(); ++k) {
    const float mk = b1 * m[k] + (1 - b1) * g[k];
    const float vk = b2 * v[k] + (1 - b2) * g[k] * g[k];
    m[k] = mk;
    v[k] = vk;
    p[k] = p[k] * factor - step_size * mk / (std::sqrt(vk) / root_correction + eps);
  }
}

std::map<std::string, double> AdamW::hyper_parameters() const {
  std::map<std::string, double> out = Adam::hyper_parameters();
  out["weight_decay"] = weight_decay_;
  return out;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, ParameterList params, float lr) {
  if (name == "sgd") return std::make_unique<SGD>(std::move(params), lr);
  if (name == "momentum") return std::make_unique<Momentum>(std::move(params), lr, 0.9f);
  if (name == "adam") return std::make_unique<Adam>(std::move(params), lr);
  SF_THROW(NotFound, "unknown optimizer '{}' (known: sgd, momentum, adam)", name);
}

}  // namespace sf::nn
