/// @file
/// Optimizers: update parameters in place from their gradients (MindSpore nn.SGD,
/// nn.Momentum, nn.Adam semantics; AdamW as PyTorch's torch.optim.AdamW). step() is called
/// between runtime steps, never during.
///
/// Any of them can clip the gradients by their global norm before updating
/// (set_max_grad_norm(), train/clip_grad.h); under semi-auto parallel Model gives the optimizer
/// the placement of its gradient blocks (set_grad_placement()), so the norm is the one device's.
/// docs/optimizers.md has the formulas.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <cstdint>
#include <vector>

#include <shardflow/train/clip_grad.h>
#include <shardflow/train/parameter.h>

namespace sf::nn {

/// The base of the optimizers: updates its parameters in place from their gradients.
class Optimizer {
 public:
  /// An optimizer of `params` with this learning rate.
  Optimizer(ParameterList params, float learning_rate);
  virtual ~Optimizer() = default;

  /// Updates every parameter. grads[i] is the gradient of parameters()[i] (same shape; checked).
  /// With max_grad_norm() set, the update reads the gradients clipped by their global norm
  /// (scaled copies; `grads` are not written): then, with a grad_placement() group, a
  /// collective that every rank of the group calls for the same step.
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
  /// What it is ("sgd", "momentum", "adam", as make_optimizer names them, or "adamw"): a training state
  /// records it (train/training_state.h), and a resume with another kind is refused.
  virtual std::string kind() const = 0;
  /// Its hyper-parameters by name, the learning rate included ("learning_rate", "momentum",
  /// "beta1", ..., and "max_grad_norm" when clipping), each value exactly the float it uses: a
  /// training state records them too.
  virtual std::map<std::string, double> hyper_parameters() const;
  /// The learning rate if this optimizer is plain SGD, which a training graph can run
  /// in-place (train/sgd_in_graph.h); then the graph updates and count_step() is called.
  virtual std::optional<float> in_graph_sgd_rate() const { return std::nullopt; }
  /// Counts a step that the training graph took (in_graph_sgd_rate()).
  void count_step() { ++global_step_; }

  /// Clips the gradients by their global L2 norm before every update from now on
  /// (clip_by_global_norm(), train/clip_grad.h): each is scaled by
  /// min(1, max_norm / (norm + 1e-6)). nullopt turns it off (the default). Throws
  /// InvalidArgument, naming max_grad_norm, for a value <= 0 or not finite. Set it before Model
  /// builds its training step (the first train()): plain SGD with clipping is not compiled into
  /// the training graph. A training state records it among the hyper-parameters.
  void set_max_grad_norm(std::optional<float> max_norm);
  /// The clipping threshold, or nullopt when the gradients are not clipped.
  std::optional<float> max_grad_norm() const { return max_grad_norm_; }
  /// Where the gradients step() receives lie among the ranks (train/clip_grad.h), read when
  /// clipping: Model sets it in semi-auto and auto parallel mode from the parameters' layouts;
  /// the default is one device (or ranks holding every gradient whole, as in data parallel).
  /// Throws InvalidArgument when placement.counted is neither empty nor one flag per parameter.
  void set_grad_placement(GradPlacement placement);
  /// The placement set_grad_placement() gave.
  const GradPlacement& grad_placement() const { return placement_; }
  /// The global norm of the last step's gradients, before clipping; nullopt until a step with
  /// clipping on (the norm is only computed then).
  std::optional<double> last_grad_norm() const { return last_grad_norm_; }

 protected:
  /// Updates parameters()[i], `param`, from its gradient `grad`.
  virtual void update(size_t i, Tensor& param, const Tensor& grad) = 0;
  ParameterList params_;     ///< parameters()
  float lr_;                 ///< learning_rate()
  int64_t global_step_ = 0;  ///< global_step()

 private:
  std::optional<float> max_grad_norm_;
  GradPlacement placement_;
  std::optional<double> last_grad_norm_;
  std::vector<Tensor> clipped_;  // the scaled copies of the last clipped step, reused
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
    // Clipping needs every gradient before any update: the fused in-graph step cannot wait.
    return momentum_ == 0 && weight_decay_ == 0 && !max_grad_norm() ? std::optional<float>(lr_) : std::nullopt;
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
  /// For subclasses: `who` names the optimizer in the errors of bad hyper-parameters.
  Adam(const char* who, ParameterList params, float learning_rate, float beta1, float beta2, float eps);
  void update(size_t i, Tensor& param, const Tensor& grad) override;
  /// Gives m_[i], v_[i] parameters()[i]'s current shape (zero), if it changed.
  void fit_state(size_t i);
  float beta1_;  ///< the first moment's decay rate
  float beta2_;  ///< the second moment's decay rate
  float eps_;    ///< added to the denominator
  std::vector<Tensor> m_;  ///< first moments, one per parameter ("moment1.<name>")
  std::vector<Tensor> v_;  ///< second moments, one per parameter ("moment2.<name>")
};

/// Which parameters AdamW decays: true for a parameter it decays.
using DecayFilter = std::function<bool(const Parameter&)>;

/// A DecayFilter that decays the parameters of two dims or more (the weights of Dense, MatMul,
/// Conv2d) and none of the vectors: biases and the gamma and beta of LayerNorm and BatchNorm,
/// which the usual transformer recipe leaves undecayed (they set scales and offsets, not
/// capacity).
bool decay_except_vectors(const Parameter& p);

/// AdamW (Loshchilov & Hutter's decoupled weight decay), as PyTorch's torch.optim.AdamW: at step
/// t, for a parameter that decays, p -= lr * weight_decay * p; then
/// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
/// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
/// Unlike Adam here (MindSpore's nn.Adam puts eps outside the bias correction), eps is added to
/// the bias-corrected sqrt(v), as PyTorch does; unlike MindSpore's nn.AdamWeightDecay, the
/// moments are bias-corrected. The decay never reads the gradient, so clipping leaves it alone.
/// Its state is Adam's ("moment1.<p>", "moment2.<p>"), checkpointed and restored the same way.
class AdamW : public Adam {
 public:
  /// PyTorch's defaults. `decay` picks the parameters that decay (decay_except_vectors, or a
  /// lambda over names); empty decays every parameter, as PyTorch does. Throws InvalidArgument,
  /// naming the option, for betas outside [0, 1), a negative or non-finite eps or weight_decay.
  AdamW(ParameterList params, float learning_rate, float beta1 = 0.9f, float beta2 = 0.999f, float eps = 1e-8f,
        float weight_decay = 1e-2f, const DecayFilter& decay = {});
  std::string kind() const override { return "adamw"; }
  std::map<std::string, double> hyper_parameters() const override;
  /// The decoupled weight decay rate.
  float weight_decay() const { return weight_decay_; }
  /// Whether parameters()[i] decays (decided once, when the optimizer is made).
  bool decays(size_t i) const { return decays_.at(i) != 0; }

 protected:
  void update(size_t i, Tensor& param, const Tensor& grad) override;

 private:
  float weight_decay_;
  std::vector<uint8_t> decays_;  // bytes: copying an empty vector<bool> trips UBSan in libstdc++ 12
};

/// "sgd", "momentum" (0.9) or "adam"; throws NotFound naming the unknown name. AdamW is made
/// by its constructor: it has no default that fits every network (which parameters decay).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, ParameterList params, float learning_rate);

}  // namespace sf::nn
