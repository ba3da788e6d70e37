/// @file
/// The cells of a convolutional network, NCHW (MindSpore nn names): Conv2d, BatchNorm2d,
/// MaxPool2d, AvgPool2d, and GlobalAvgPool2d ((N,C,H,W) -> (N,C), ResNet's head).
///
/// BatchNorm2d is the one cell whose graph depends on Cell::set_train: training builds
/// BatchNorm on the batch's statistics plus two BatchNormUpdateMoving nodes, which update its
/// non-trainable moving_mean / moving_variance in place and which nothing reads (a training
/// program runs every in-place node of its forward graph); inference builds BatchNorm on the
/// moving statistics and no update. Like every cell, these are built on one thread.
///
/// Conv2d, BatchNorm2d, MaxPool2d and AvgPool2d are one op each and can be sharded in semi-auto
/// parallel mode as MindSpore shards that op, `conv.shard(in_strategy, out_strategy)`
/// (train/primitive.h; the rules are parallel/sharding/*_rule.cc):
///
/// @code
///   conv1->shard({{1, 1, 1, 1}, {4, 1, 1, 1}});     // output channels split (column parallel)
///   conv2->shard({{1, 4, 1, 1}, {1, 4, 1, 1}});     // input channels split, AllReduce after
///   bn->shard({{1, 4, 1, 1}, {4}, {4}, {4}, {4}});  // channels split: exact statistics
///   pool->shard({{2, 2, 1, 1}});                    // batch and channels split
/// @endcode
///
/// Image dims (H, W, and the kernel's) are gathered when a strategy splits them. BatchNorm2d's
/// moving statistics are updated with BatchNorm's layout: split like gamma by a channel split,
/// replicated (each rank's own, from its rows) by a batch split.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <shardflow/train/cell.h>

namespace sf::nn {

/// y = conv(x, weight) (+ bias on dim 1), weight (out, in, k, k), the same pad on every side.
/// The default weight_init is he_normal, N(0, sqrt(2 / (in k k))), the initialisation ResNet was
/// trained with (MindSpore's and PyTorch's own default is dense_weight, U(+-1/sqrt(in k k))).
class Conv2d : public Cell {
 public:
  /// A square kernel_size x kernel_size convolution, its parameters from the named initializers.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t pad = 0,
         bool has_bias = false, const std::string& weight_init = "he_normal", const std::string& bias_init = "zeros");
  /// Adds the Conv2d op (and the bias) to `b`'s graph.
  Value construct(GraphBuilder& b, Value x) override;
  /// The kernel, of shape (out, in, k, k).
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }  ///< undefined without has_bias

  using Cell::shard;
  /// Shards the convolution (not the bias): in_strategy ((n, c, h, w), (o, c, kh, kw)) for x and
  /// the kernel, the channels c split alike in both.
  Conv2d& shard(std::vector<TensorStrategy> in_strategy, std::vector<TensorStrategy> out_strategy = {});

 private:
  Parameter weight_, bias_;
  Primitive& conv_;
};

/// Per-channel batch normalisation of (N, C, H, W) (also (N, C)): trainable gamma (ones) and
/// beta (zeros), non-trainable moving_mean (zeros) and moving_variance (ones). momentum is
/// MindSpore's: moving = momentum * moving + (1 - momentum) * batch statistic.
class BatchNorm2d : public Cell {
 public:
  /// Normalises num_features channels; eps is added to the variance.
  explicit BatchNorm2d(int64_t num_features, float eps = 1e-5f, float momentum = 0.9f);
  /// Adds BatchNorm, and when training the moving statistics' updates, to `b`'s graph.
  Value construct(GraphBuilder& b, Value x) override;
  /// The trainable scale, one per channel.
  Parameter& gamma() { return gamma_; }
  /// The trainable shift, one per channel.
  Parameter& beta() { return beta_; }
  /// The moving mean (not trainable), used for inference.
  Parameter& moving_mean() { return moving_mean_; }
  /// The moving variance (not trainable), used for inference.
  Parameter& moving_variance() { return moving_variance_; }

  using Cell::shard;
  /// Shards BatchNorm: in_strategy ((n, c, h, w), (c,), (c,), (c,), (c,)) for x, gamma, beta and
  /// the moving statistics; the statistics' updates follow it.
  BatchNorm2d& shard(std::vector<TensorStrategy> in_strategy, std::vector<TensorStrategy> out_strategy = {});

 private:
  float momentum_;
  Parameter gamma_, beta_, moving_mean_, moving_variance_;
  Primitive& bn_;
};

/// Square-window max pooling (padding never wins).
class MaxPool2d : public Cell {
 public:
  /// A kernel_size x kernel_size window moved by stride, pad on every side.
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = 1, int64_t pad = 0)
      : pool_(register_primitive("", "MaxPool", {{"kernel", kernel_size}, {"stride", stride}, {"pad", pad}})) {}
  /// Adds the MaxPool op to `b`'s graph.
  Value construct(GraphBuilder& b, Value x) override { return pool_(b, {x}); }

  using Cell::shard;
  /// Shards the pooling: in_strategy ((n, c, h, w)).
  MaxPool2d& shard(std::vector<TensorStrategy> in_strategy, std::vector<TensorStrategy> out_strategy = {}) {
    pool_.shard(std::move(in_strategy), std::move(out_strategy));
    return *this;
  }

 private:
  Primitive& pool_;
};

/// Square-window average pooling; every window divides by kernel^2, padding included (PyTorch's
/// count_include_pad=True).
class AvgPool2d : public Cell {
 public:
  /// A kernel_size x kernel_size window moved by stride, pad on every side.
  explicit AvgPool2d(int64_t kernel_size, int64_t stride = 1, int64_t pad = 0)
      : pool_(register_primitive("", "AvgPool", {{"kernel", kernel_size}, {"stride", stride}, {"pad", pad}})) {}
  /// Adds the AvgPool op to `b`'s graph.
  Value construct(GraphBuilder& b, Value x) override { return pool_(b, {x}); }

  using Cell::shard;
  /// Shards the pooling: in_strategy ((n, c, h, w)).
  AvgPool2d& shard(std::vector<TensorStrategy> in_strategy, std::vector<TensorStrategy> out_strategy = {}) {
    pool_.shard(std::move(in_strategy), std::move(out_strategy));
    return *this;
  }

 private:
  Primitive& pool_;
};

/// (N, C, H, W) -> (N, C): the mean of each channel over H and W.
class GlobalAvgPool2d : public Cell {
 public:
  /// Adds the ReduceMean over H and W to `b`'s graph.
  Value construct(GraphBuilder& b, Value x) override { return b.global_avg_pool(x); }
};

}  // namespace sf::nn
