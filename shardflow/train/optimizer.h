/// @file
/// Optimizers: update parameters in place from their gradients (MindSpore nn.SGD,
/// nn.Momentum, nn.Adam semantics). step() is called between runtime steps, never during.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <shardflow/train/parameter.h>

namespace sf::nn {

/// The base of the optimizers: updates its parameters in place from their gradients.
class Optimizer {
 public:
  /// An optimizer of `params` with this learning rate.
  Optimizer(ParameterList params, float learning_rate);
  virtual ~Optimizer() = default;

  /// Updates every parameter. grads[i] is the gradient of parameters()[i] (same shape; checked).
  void step(const std::vector<Tensor>& grads);
  /// The parameters it updates.
  const ParameterList& parameters() const { return params_; }
  /// The learning rate.
  float learning_rate() const { return lr_; }
  /// The number of steps taken (saved in checkpoints).
  int64_t global_step() const { return global_step_; }
  /// Named state tensors ("moments.fc.weight", ...), saved in checkpoints with the parameters.
  /// Each has its parameter's current shape: a parameter cut to its block (semi-auto parallel)
  /// after the optimizer was made has state of the block's shape, zero until its first update,
  /// so a checkpoint's state loads into it before the first step.
  virtual std::vector<std::pair<std::string, Tensor>> state() { return {}; }
  /// Sets the number of steps taken (a checkpoint being loaded).
  void set_global_step(int64_t s) { global_step_ = s; }
  /// What it is, as make_optimizer names it ("sgd", "momentum", "adam"): a training state
  /// records it (train/training_state.h), and a resume with another kind is refused.
  virtual std::string kind() const = 0;
  /// Its hyper-parameters by name, the learning rate included ("learning_rate", "momentum",
  /// "beta1", ...), each value exactly the float it uses: a training state records them too.
  virtual std::map<std::string, double> hyper_parameters() const { return {{"learning_rate", lr_}}; }
  /// The learning rate if this optimizer is plain SGD, which a training graph can run
  /// in-place (train/sgd_in_graph.h); then the graph updates and count_step() is called.
  virtual std::optional<float> in_graph_sgd_rate() const { return std::nullopt; }
  /// Counts a step that the training graph took (in_graph_sgd_rate()).
  void count_step() { ++global_step_; }

 protected:
  /// Updates parameters()[i], `param`, from its gradient `grad`.
  virtual void update(size_t i, Tensor& param, const Tensor& grad) = 0;
  ParameterList params_;     ///< parameters()
  float lr_;                 ///< learning_rate()
  int64_t global_step_ = 0;  ///< global_step()
};

/// p -= lr * (g + weight_decay * p); with momentum: v = momentum * v + g, p -= lr * v.
class SGD : public Optimizer {
 public:
  /// Plain SGD when momentum and weight_decay are 0.
  SGD(ParameterList params, float learning_rate, float momentum = 0.0f, float weight_decay = 0.0f);
  std::vector<std::pair<std::string, Tensor>> state() override;
  std::string kind() const override { return "sgd"; }
  std::map<std::string, double> hyper_parameters() const override;
  std::optional<float> in_graph_sgd_rate() const override {
    return momentum_ == 0 && weight_decay_ == 0 ? std::optional<float>(lr_) : std::nullopt;
  }

 protected:
  void update(size_t i, Tensor& param, const Tensor& grad) override;

 private:
  float momentum_, weight_decay_;
  void fit_state(size_t i);  // moments_[i] of parameters()[i]'s current shape
  std::vector<Tensor> moments_;
};

/// MindSpore nn.Momentum: v = momentum * v + g; p -= lr * v.
class Momentum : public SGD {
 public:
  /// SGD with this momentum and no weight decay.
  Momentum(ParameterList params, float learning_rate, float momentum);
  std::string kind() const override { return "momentum"; }
};

/// Adam with bias correction (MindSpore nn.Adam defaults).
class Adam : public Optimizer {
 public:
  /// Adam with these moment decay rates; eps keeps the division finite.
  Adam(ParameterList params, float learning_rate, float beta1 = 0.9f, float beta2 = 0.999f, float eps = 1e-8f);
  std::vector<std::pair<std::string, Tensor>> state() override;
  std::string kind() const override { return "adam"; }
  std::map<std::string, double> hyper_parameters() const override;

 protected:
  void update(size_t i, Tensor& param, const Tensor& grad) override;

 private:
  float beta1_, beta2_, eps_;
  void fit_state(size_t i);  // m_[i], v_[i] of parameters()[i]'s current shape
  std::vector<Tensor> m_, v_;
};

/// "sgd", "momentum" (0.9) or "adam"; throws NotFound naming the unknown name.
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, ParameterList params, float learning_rate);

}  // namespace sf::nn
