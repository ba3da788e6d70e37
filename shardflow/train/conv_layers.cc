#include <shardflow/train/conv_layers.h>

#include <shardflow/core/error.h>

namespace sf::nn {

Conv2d::Conv2d(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad, bool has_bias,
               const std::string& weight_init, const std::string& bias_init)
    // The op as a primitive in the cell's own scope ("conv1/Conv2D"), so that shard() can key it.
    : conv_(register_primitive("", "Conv2D", {{"stride", stride}, {"pad", pad}})) {
  SF_ENFORCE(in > 0 && out > 0 && k > 0 && stride > 0 && pad >= 0, InvalidArgument,
             "Conv2d({}, {}, kernel {}, stride {}, pad {}): channels, kernel and stride must be > 0, pad >= 0", in,
             out, k, stride, pad);
  weight_ = register_parameter("weight", {out, in, k, k}, weight_init);
  if (has_bias) bias_ = register_parameter("bias", {out}, bias_init);
}

Value Conv2d::construct(GraphBuilder& b, Value x) {
  Value y = conv_(b, {x, param(b, weight_)});
  return bias_.defined() ? b.bias_add(y, param(b, bias_)) : y;
}

Conv2d& Conv2d::shard(std::vector<TensorStrategy> in_strategy, std::vector<TensorStrategy> out_strategy) {
  conv_.shard(std::move(in_strategy), std::move(out_strategy));
  return *this;
}

BatchNorm2d::BatchNorm2d(int64_t num_features, float eps, float momentum)
    : momentum_(momentum),
      bn_(register_primitive("", "BatchNorm", {{"epsilon", double{eps}}, {"momentum", double{momentum}}})) {
  SF_ENFORCE(num_features > 0 && eps > 0.0f && momentum >= 0.0f && momentum <= 1.0f, InvalidArgument,
             "BatchNorm2d({}, eps {}, momentum {}): need num_features > 0, eps > 0, 0 <= momentum <= 1",
             num_features, eps, momentum);
  gamma_ = register_parameter("gamma", {num_features}, "ones");
  beta_ = register_parameter("beta", {num_features}, "zeros");
  moving_mean_ = register_parameter("moving_mean", {num_features}, "zeros", /*requires_grad=*/false);
  moving_variance_ = register_parameter("moving_variance", {num_features}, "ones", /*requires_grad=*/false);
}

Value BatchNorm2d::construct(GraphBuilder& b, Value x) {
  const Value mean = param(b, moving_mean_), var = param(b, moving_variance_);
  // The mode is read per graph, so the training flag is set per call, not in the primitive.
  Value y = bn_(b, {x, param(b, gamma_), param(b, beta_), mean, var}, {{"training", int64_t{training()}}});
  if (training()) b.batch_norm_update(x, mean, var, momentum_);
  return y;
}

BatchNorm2d& BatchNorm2d::shard(std::vector<TensorStrategy> in_strategy, std::vector<TensorStrategy> out_strategy) {
  bn_.shard(std::move(in_strategy), std::move(out_strategy));
  return *this;
}

}  // namespace sf::nn
