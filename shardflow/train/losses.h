/// @file
/// Loss functions as MindSpore's nn losses: each adds the ops that turn (logits, labels)
/// into an f32 scalar.
#pragma once

#include <functional>
#include <memory>

#include <shardflow/ops/builder.h>

namespace sf::nn {

/// A loss: the ops that turn a network's output and its labels into an f32 scalar.
class LossFn {
 public:
  virtual ~LossFn() = default;
  /// Adds the loss's ops to `b`'s graph; returns the scalar loss.
  virtual Value operator()(GraphBuilder& b, Value logits, Value labels) const = 0;
};

/// Sparse softmax cross entropy, mean over the batch; labels are i32 class ids.
class CrossEntropyLoss : public LossFn {
 public:
  Value operator()(GraphBuilder& b, Value logits, Value labels) const override;
};

/// Mean of (pred - target)^2 over all elements, as MindSpore's nn.MSELoss.
class MSELoss : public LossFn {
 public:
  Value operator()(GraphBuilder& b, Value pred, Value target) const override;
};

}  // namespace sf::nn
