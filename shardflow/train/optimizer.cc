#include <shardflow/train/optimizer.h>

#include <cmath>

#include <shardflow/core/brief.h>
#include <shardflow/core/error.h>

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
  ++global_step_;
  for (size_t i = 0; i < grads.size(); ++i) update(i, params_[i].value(), grads[i]);
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
  return {{"learning_rate", lr_}, {"momentum", momentum_}, {"weight_decay", weight_decay_}};
}

Momentum::Momentum(ParameterList params, float lr, float momentum) : SGD(std::move(params), lr, momentum) {
  SF_ENFORCE(momentum > 0, InvalidArgument, "Momentum: momentum must be > 0, got {}", momentum);
}

Adam::Adam(ParameterList params, float lr, float beta1, float beta2, float eps)
    : Optimizer(std::move(params), lr), beta1_(beta1), beta2_(beta2), eps_(eps) {
  SF_ENFORCE(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, InvalidArgument,
             "Adam: betas must be in [0, 1), got {} and {}", beta1, beta2);
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
  return {{"learning_rate", lr_}, {"beta1", beta1_}, {"beta2", beta2_}, {"eps", eps_}};
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, ParameterList params, float lr) {
  if (name == "sgd") return std::make_unique<SGD>(std::move(params), lr);
  if (name == "momentum") return std::make_unique<Momentum>(std::move(params), lr, 0.9f);
  if (name == "adam") return std::make_unique<Adam>(std::move(params), lr);
  SF_THROW(NotFound, "unknown optimizer '{}' (known: sgd, momentum, adam)", name);
}

}  // namespace sf::nn
